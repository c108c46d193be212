import { describe, expect, it } from 'vitest';
import { tracingConfig } from './tracing-config.js';

describe('tracingConfig (SPEC §8: the standard OTEL_* variables only)', () => {
  it('is off without an endpoint, whatever else is set', () => {
    expect(tracingConfig({}).enabled).toBe(false);
    expect(
      tracingConfig({
        OTEL_SERVICE_NAME: 'svc',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_ENDPOINT: ' ',
      }).enabled,
    ).toBe(false);
  });

  it('is on with an endpoint (or the traces-only one), http/protobuf by default', () => {
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318' })).toMatchObject({
      enabled: true,
      protocol: 'http/protobuf',
      serviceName: 'agentloop',
      captureContent: false,
      problem: null,
    });
    expect(
      tracingConfig({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://otel:4318/v1/traces',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'api',
      }),
    ).toMatchObject({ enabled: true, protocol: 'http/json', serviceName: 'api' });
    expect(
      tracingConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      }).protocol,
    ).toBe('http/protobuf');
  });

  it('honours OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none', () => {
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318', OTEL_SDK_DISABLED: 'true' }).enabled).toBe(
      false,
    );
    expect(
      tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318', OTEL_TRACES_EXPORTER: 'none' }).enabled,
    ).toBe(false);
  });

  it('refuses grpc with a reason (off, one warning), never a crash', () => {
    const c = tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(c.enabled).toBe(false);
    expect(c.problem).toBe(
      'OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported (http/json and http/protobuf are): no spans are exported',
    );
  });

  it('reads the sampler: per run, by its trace id; an unknown one keeps always on', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318' };
    expect(tracingConfig(on).sampler).toEqual({ kind: 'always_on', ratio: 1 });
    expect(tracingConfig({ ...on, OTEL_TRACES_SAMPLER: 'parentbased_always_off' }).sampler).toEqual({
      kind: 'always_off',
      ratio: 0,
    });
    expect(
      tracingConfig({ ...on, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).sampler,
    ).toEqual({ kind: 'ratio', ratio: 0.25 });
    expect(
      tracingConfig({ ...on, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '7' }).sampler,
    ).toEqual({ kind: 'ratio', ratio: 1 });
    expect(tracingConfig({ ...on, OTEL_TRACES_SAMPLER: 'jaeger_remote' }).sampler).toEqual({
      kind: 'always_on',
      ratio: 1,
    });
  });

  it('reads content capture and the batch processor settings; a malformed number keeps the default', () => {
    const c = tracingConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'TRUE',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_BSP_MAX_QUEUE_SIZE: 'lots',
    });
    expect(c.captureContent).toBe(true);
    expect(c.batch).toEqual({ scheduledDelayMillis: 200 });
    expect(c.attributeValueLengthLimit).toBeUndefined();
    expect(
      tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318', OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '4096' })
        .attributeValueLengthLimit,
    ).toBe(4096);
    expect(
      tracingConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318',
        OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '4096',
        OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: '100',
      }).attributeValueLengthLimit,
    ).toBe(100);
  });
});
