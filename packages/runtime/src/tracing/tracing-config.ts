import { z } from 'zod';

/** What OpenTelemetry's standard variables ask of this process (SPEC §8); tracing is off unless an endpoint is set. */
export interface TracingConfig {
  enabled: boolean;
  protocol: 'http/json' | 'http/protobuf';
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts and results go on the spans. */
  captureContent: boolean;
  serviceName: string;
  /**
   * OTEL_TRACES_SAMPLER (+ _ARG): which runs are traced, decided once per run by its trace id (every sampler is
   * parent-based here: a run's spans follow its root). An unknown name keeps the default, always on.
   */
  sampler: { kind: 'always_on' | 'always_off' | 'ratio'; ratio: number };
  /** OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT (or OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT): longer string attributes are cut [none]. */
  attributeValueLengthLimit?: number;
  /** OTEL_BSP_*: the batch span processor's settings (the SDK's defaults where unset). */
  batch: {
    scheduledDelayMillis?: number;
    maxQueueSize?: number;
    maxExportBatchSize?: number;
    exportTimeoutMillis?: number;
  };
  /** Why tracing is off although variables ask for it (an unsupported protocol), for one warning line. */
  problem: string | null;
}

const ProtocolSchema = z.enum(['http/json', 'http/protobuf']);
const BSP = {
  scheduledDelayMillis: 'OTEL_BSP_SCHEDULE_DELAY',
  maxQueueSize: 'OTEL_BSP_MAX_QUEUE_SIZE',
  maxExportBatchSize: 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
  exportTimeoutMillis: 'OTEL_BSP_EXPORT_TIMEOUT',
} as const;
const PositiveInt = z.coerce.number().int().positive();
const Ratio = z.coerce.number().min(0).max(1);

function lengthLimit(v: string | undefined): { attributeValueLengthLimit?: number } {
  const n = PositiveInt.safeParse(v);
  return v !== undefined && n.success ? { attributeValueLengthLimit: n.data } : {};
}

function sampler(name: string | undefined, arg: string | undefined): TracingConfig['sampler'] {
  switch (name?.toLowerCase()) {
    case 'always_off':
    case 'parentbased_always_off':
      return { kind: 'always_off', ratio: 0 };
    case 'traceidratio':
    case 'parentbased_traceidratio': {
      const r = Ratio.safeParse(arg ?? '1');
      return { kind: 'ratio', ratio: r.success ? r.data : 1 };
    }
    default:
      return { kind: 'always_on', ratio: 1 };
  }
}
const set = (v: string | undefined): string | undefined => (v !== undefined && v.trim() !== '' ? v.trim() : undefined);

/**
 * Reads the OTEL_* variables the SDK's exporters also read (they take the endpoint, headers, timeout and batch
 * settings themselves): on when OTEL_EXPORTER_OTLP_ENDPOINT or its traces-only form is set, and neither
 * OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says otherwise.
 */
export function tracingConfig(
  env: Record<string, string | undefined>,
  defaultServiceName = 'agentloop',
): TracingConfig {
  const endpoint = set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ?? set(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const off =
    set(env.OTEL_SDK_DISABLED)?.toLowerCase() === 'true' || set(env.OTEL_TRACES_EXPORTER)?.toLowerCase() === 'none';
  const asked = set(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? set(env.OTEL_EXPORTER_OTLP_PROTOCOL) ?? 'http/protobuf';
  const protocol = ProtocolSchema.safeParse(asked);
  const base = {
    captureContent: set(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)?.toLowerCase() === 'true',
    serviceName: set(env.OTEL_SERVICE_NAME) ?? defaultServiceName,
    sampler: sampler(set(env.OTEL_TRACES_SAMPLER), set(env.OTEL_TRACES_SAMPLER_ARG)),
    ...lengthLimit(set(env.OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT) ?? set(env.OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT)),
    // a malformed value keeps the SDK's default, as the SDK does for its own variables
    batch: Object.fromEntries(
      Object.entries(BSP).flatMap(([k, name]) => {
        const n = PositiveInt.safeParse(set(env[name]));
        return n.success ? [[k, n.data]] : [];
      }),
    ),
  };
  if (!endpoint || off) return { ...base, enabled: false, protocol: 'http/protobuf', problem: null };
  if (!protocol.success) {
    return {
      ...base,
      enabled: false,
      protocol: 'http/protobuf',
      problem: `OTEL_EXPORTER_OTLP_PROTOCOL=${asked} is not supported (http/json and http/protobuf are): no spans are exported`,
    };
  }
  return { ...base, enabled: true, protocol: protocol.data, problem: null };
}
