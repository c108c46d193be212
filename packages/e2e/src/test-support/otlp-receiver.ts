import http from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';

/** A span as the receiver decoded it, from either encoding. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a span without a parent. */
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string; attributes: Record<string, unknown> }>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  /** Start and end, in ms since the epoch (OTLP's nanoseconds, cut to ms: exact enough to order spans of processes on one host). */
  startMs: number;
  endMs: number;
  /** 2 = error (OTLP's STATUS_CODE_ERROR), 0 unset. */
  status: number;
  /** The resource's `service.name` and `agentloop.roles`. */
  service: string;
  roles: string;
  /** The encoding it came in. */
  encoding: 'json' | 'protobuf';
}

// the parts of opentelemetry-proto's trace service request the tests read (field numbers as upstream)
const PROTO = `
syntax = "proto3";
message AnyValue { oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; ArrayValue array_value = 5; } }
message ArrayValue { repeated AnyValue values = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message Resource { repeated KeyValue attributes = 1; }
message Link { bytes trace_id = 1; bytes span_id = 2; repeated KeyValue attributes = 4; }
message Event { fixed64 time_unix_nano = 1; string name = 2; repeated KeyValue attributes = 3; }
message Status { string message = 2; int32 code = 3; }
message Span { bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; int32 kind = 6; fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8; repeated KeyValue attributes = 9; repeated Event events = 11; repeated Link links = 13; Status status = 15; }
message ScopeSpans { repeated Span spans = 2; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
`;
const RequestType = protobuf.parse(PROTO, { keepCase: false }).root.lookupType('ExportTraceServiceRequest');

type Json = Record<string, any>;

const hex = (v: unknown): string =>
  v instanceof Uint8Array ? Buffer.from(v).toString('hex') : typeof v === 'string' ? v : '';

/** OTLP times are uint64 nanoseconds (a decimal string in JSON and from protobuf's longs: String). */
const nanosToMs = (v: unknown): number => Number(BigInt(String(v ?? '0')) / 1_000_000n);

function anyValue(v: Json | undefined): unknown {
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v) return ((v.arrayValue as Json).values ?? []).map((x: Json) => anyValue(x));
  return undefined;
}

const attrs = (kvs: Json[] | undefined): Record<string, unknown> =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, anyValue(kv.value)]));

/**
 * An OTLP/HTTP traces receiver in the test process (127.0.0.1, its own port): decodes http/json and http/protobuf
 * export requests into spans, answers 200, and counts every connection (a process with tracing off must open none).
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  connections = 0;
  /** Bytes of the export requests' bodies. */
  bytes = 0;
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      this.bytes += body.length;
      try {
        if (req.url !== '/v1/traces') throw new Error(`unexpected path ${req.url}`);
        const json = (req.headers['content-type'] ?? '').includes('json');
        const decoded = json
          ? (JSON.parse(body.toString()) as Json)
          : (RequestType.toObject(RequestType.decode(body), { longs: String, defaults: false }) as Json);
        this.take(decoded, json ? 'json' : 'protobuf');
        res
          .writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' })
          .end(json ? '{}' : undefined);
      } catch (e) {
        res.writeHead(400).end(String(e));
      }
    });
  });

  static async start(): Promise<OtlpReceiver> {
    const r = new OtlpReceiver();
    r.server.on('connection', () => void r.connections++);
    await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
    return r;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private take(req: Json, encoding: ReceivedSpan['encoding']): void {
    for (const rs of (req.resourceSpans ?? []) as Json[]) {
      const resource = attrs(rs.resource?.attributes);
      for (const ss of (rs.scopeSpans ?? []) as Json[]) {
        for (const s of (ss.spans ?? []) as Json[]) {
          this.spans.push({
            traceId: hex(s.traceId),
            spanId: hex(s.spanId),
            parentSpanId: hex(s.parentSpanId),
            name: s.name,
            attributes: attrs(s.attributes),
            links: ((s.links ?? []) as Json[]).map((l) => ({
              traceId: hex(l.traceId),
              spanId: hex(l.spanId),
              attributes: attrs(l.attributes),
            })),
            events: ((s.events ?? []) as Json[]).map((e) => ({ name: e.name, attributes: attrs(e.attributes) })),
            startMs: nanosToMs(s.startTimeUnixNano),
            endMs: nanosToMs(s.endTimeUnixNano),
            status: Number(s.status?.code ?? 0),
            service: String(resource['service.name'] ?? ''),
            roles: String(resource['agentloop.roles'] ?? ''),
            encoding,
          });
        }
      }
    }
  }
}
