import { tracingConfig } from './tracing-config.js';

/** Whether this process exports spans (set once at start); every seam checks it first, so tracing off costs a branch. */
export const tracingState = {
  on: false,
  captureContent: false,
  /** Whether the run of this trace id is sampled (the SDK's root sampler decides; minted into its traceparent's flags). */
  sampled: (_traceId: string): boolean => true,
};

export interface Tracing {
  /** Exports what is still buffered; a no-op when tracing is off. */
  shutdown(): Promise<void>;
}

/**
 * Turns tracing on when OTEL_* asks for it (SPEC §8), loading the SDK then and only then (a dynamic import: a process
 * without an endpoint loads no SDK module). `attributes`: the process's resource attributes (its roles).
 */
export async function startTracing(
  env: Record<string, string | undefined>,
  attributes: Record<string, string>,
  warn: (message: string) => void,
): Promise<Tracing> {
  const config = tracingConfig(env);
  if (config.problem) warn(config.problem);
  if (!config.enabled) return { shutdown: async () => undefined };
  const { loadTracingSdk } = await import('./tracing-sdk.js');
  const sdk = await loadTracingSdk(config, attributes);
  tracingState.on = true;
  tracingState.sampled = sdk.sampled;
  tracingState.captureContent = config.captureContent;
  return {
    shutdown: async () => {
      await sdk.shutdown();
      tracingState.on = false;
    },
  };
}
