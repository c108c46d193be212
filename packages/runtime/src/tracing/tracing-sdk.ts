import { context, trace } from '@opentelemetry/api';
import type { TracingConfig } from './tracing-config.js';
import { pinned } from './pinned-trace.js';

export interface TracingSdk {
  /** Exports what is still buffered and stops (SIGTERM, after the workers drained). */
  shutdown(): Promise<void>;
}

/**
 * Loads the OpenTelemetry SDK and registers it globally: a BatchSpanProcessor over the OTLP exporter of the
 * configured protocol (the exporter reads endpoint, headers and timeout from OTEL_* itself), the resource from
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, and an AsyncLocalStorage context so a job's spans and log lines
 * find the run's trace. Imported only when tracing is on: with it off, no SDK module is loaded at all.
 */
export async function loadTracingSdk(config: TracingConfig, attributes: Record<string, string>): Promise<TracingSdk> {
  const [sdk, resources, hooks] = await Promise.all([import('@opentelemetry/sdk-trace'), import('@opentelemetry/resources'), import('@opentelemetry/context-async-hooks')]);
  const { OTLPTraceExporter } = config.protocol === 'http/json' ? await import('@opentelemetry/exporter-trace-otlp-http') : await import('@opentelemetry/exporter-trace-otlp-proto');
  const random = new sdk.RandomIdGenerator();
  const idGenerator = {
    generateTraceId: () => pinned.traceId ?? random.generateTraceId(),
    generateSpanId: () => pinned.spanId ?? random.generateSpanId(),
  };
  const resource = resources
    .resourceFromAttributes({ 'service.name': config.serviceName, ...attributes })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new sdk.TracerProvider({ resource, idGenerator, spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter(), ...config.batch })] });
  context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  return { shutdown: () => provider.shutdown() };
}
