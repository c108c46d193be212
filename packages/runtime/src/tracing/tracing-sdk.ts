import { ROOT_CONTEXT, SpanKind, context, trace } from '@opentelemetry/api';
import type { Sampler } from '@opentelemetry/sdk-trace'; // a type only: erased, loads nothing
import type { TracingConfig } from './tracing-config.js';
import { pinned } from './pinned-trace.js';

export interface TracingSdk {
  /** Exports what is still buffered and stops (SIGTERM, after the workers drained). */
  shutdown(): Promise<void>;
  /** The root sampler's decision for a new run's trace id (the same one its root span gets when recorded). */
  sampled(traceId: string): boolean;
}

/**
 * Loads the OpenTelemetry SDK and registers it globally: a BatchSpanProcessor over the OTLP exporter of the
 * configured protocol (the exporter reads endpoint, headers and timeout from OTEL_* itself), the resource from
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, and an AsyncLocalStorage context so a job's spans and log lines
 * find the run's trace. Imported only when tracing is on: with it off, no SDK module is loaded at all.
 */
export async function loadTracingSdk(config: TracingConfig, attributes: Record<string, string>): Promise<TracingSdk> {
  const [sdk, resources, hooks] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
  ]);
  const { OTLPTraceExporter } =
    config.protocol === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto');
  const random = new sdk.RandomIdGenerator();
  const idGenerator = {
    generateTraceId: () => pinned.traceId ?? random.generateTraceId(),
    generateSpanId: () => pinned.spanId ?? random.generateSpanId(),
  };
  const resource = resources
    .resourceFromAttributes({ 'service.name': config.serviceName, ...attributes })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const { kind, ratio } = config.sampler;
  const root: Sampler =
    kind === 'always_off'
      ? new sdk.AlwaysOffSampler()
      : kind === 'ratio'
        ? new sdk.TraceIdRatioBasedSampler(ratio)
        : new sdk.AlwaysOnSampler();
  const sampler = new sdk.ParentBasedSampler({ root });
  const spanLimits = config.attributeValueLengthLimit
    ? { attributeValueLengthLimit: config.attributeValueLengthLimit }
    : {};
  const provider = new sdk.TracerProvider({
    resource,
    idGenerator,
    sampler,
    spanLimits,
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter(), ...config.batch })],
  });
  context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  return {
    shutdown: () => provider.shutdown(),
    sampled: (traceId) =>
      root.shouldSample(ROOT_CONTEXT, traceId, 'invoke_agent', SpanKind.INTERNAL, {}, []).decision ===
      sdk.SamplingDecision.RECORD_AND_SAMPLED,
  };
}
