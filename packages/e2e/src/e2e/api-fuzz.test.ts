/**
 * Fuzzes the real HTTP API (SPEC §2) over real Redis with fast-check: every endpoint, hostile bodies, headers,
 * paths and ids. Properties checked on every response:
 *   - no status >= 500, no stack trace ("    at ...") in any body, no hang (every request answered in 15 s);
 *   - every non-2xx response with a body carries the SPEC error shape {"error":{"code","message","details"?}}, with a
 *     SPEC code whose status fits (415 may carry invalid_request);
 *   - another tenant's run answers exactly like a run that does not exist, on every run endpoint, whatever the body,
 *     and that answer is 404 not_found, before any other check (SPEC §2);
 *   - per endpoint, what the SPEC says for the cases where it is unambiguous (401, 404, 413, 202, 204, 422, ...);
 *   - afterwards: the service is healthy, tenant b's runs are untouched, no prototype is polluted, a run completes.
 * Requests go out one at a time over a keep-alive node:http agent (raw paths, methods, headers and bytes; no URL
 * normalisation). SSE answers are read a little, then the socket is destroyed. Requests Node's HTTP parser refuses
 * before the app sees them (raw non-ASCII request targets, unknown methods, > 16 KiB of headers) get only the generic
 * checks. Seeds vary per run; fast-check prints seed and path on failure; AGENTLOOP_FUZZ_SEED=<seed> replays one.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeploymentKeys } from '@agentloop/protocol';
import type { MockRequest, ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';

const MiB = 1024 * 1024;
const SEED = process.env.AGENTLOOP_FUZZ_SEED === undefined ? undefined : Number(process.env.AGENTLOOP_FUZZ_SEED);
/** AGENTLOOP_FUZZ_RUNS_X=<n> multiplies every property's runs: a soak before a change lands. */
const RUNS_X = Number(process.env.AGENTLOOP_FUZZ_RUNS_X ?? 1);
const runs = (numRuns: number) => {
  const n = Math.max(1, Math.round(numRuns * RUNS_X));
  return SEED === undefined ? { numRuns: n } : { numRuns: n, seed: SEED };
};
const SLOW = 180_000 * Math.max(1, RUNS_X); // per test: fuzzing plus fast-check's shrinking when something fails

// ---------------------------------------------------------------------------------------------------------------
// the mock model: fixtures pause on a marker, everything else answers "ok"

const EMAIL_MARK = 'FUZZFIXTURE_EMAIL';
const CLIENT_MARK = 'FUZZFIXTURE_CLIENT';
const script = (req: MockRequest): ReplySpec => {
  const answered = req.messages.some((m) => m.role === 'tool');
  const said = req.messages
    .filter((m) => m.role === 'user')
    .map((m) => m.content ?? '')
    .join('\n');
  if (!answered && said.includes(EMAIL_MARK))
    return { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c', body: 'hi' } }] };
  if (!answered && said.includes(CLIENT_MARK)) return { toolCalls: [{ name: 'pick_file', args: {} }] };
  return { text: 'ok' };
};

// ---------------------------------------------------------------------------------------------------------------
// raw HTTP

interface WireRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Send the body with Transfer-Encoding: chunked (no Content-Length), in 64 KiB pieces. */
  chunked?: boolean;
  /** How the body was made (for encoded or huge bodies, where the bytes say little). */
  label?: string;
}
interface WireResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: unknown;
  sse: boolean;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
let target: URL;
let sent = 0;
let sseStreams = 0;
const statusCounts = new Map<number, number>();
const groupCounts = new Map<string, number>();
let group = 'setup';

/** A header value as it goes on the wire: characters Node refuses dropped, non-ASCII text as its raw UTF-8 bytes. */
const wireHeader = (s: string) =>
  Buffer.from([...s].filter((c) => c === '\t' || (c >= ' ' && c !== '\u007f')).join(''), 'utf8').toString('latin1');
/** Control characters other than \t \n \v \f \r. */
const hasControl = (text: string) => [...text].some((c) => c < ' ' && !'\t\n\v\f\r'.includes(c));

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function send(r: WireRequest): Promise<WireResponse> {
  sent++;
  groupCounts.set(group, (groupCounts.get(group) ?? 0) + 1);
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      f();
    };
    const headers: Record<string, string> = { ...r.headers };
    if (r.body !== undefined && !r.chunked) headers['content-length'] = String(r.body.length);
    const req = http.request(
      { host: target.hostname, port: target.port, method: r.method, path: r.path, headers, agent },
      (res) => {
        const status = res.statusCode ?? 0;
        statusCounts.set(status, (statusCounts.get(status) ?? 0) + 1);
        const chunks: Buffer[] = [];
        const sse = status === 200 && /^text\/event-stream/i.test(String(res.headers['content-type'] ?? ''));
        const finish = () =>
          settle(() => {
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({ status, headers: res.headers, text, json: parseJson(text), sse });
          });
        if (sse) {
          sseStreams++;
          // a live stream never ends: read the first chunk, then hang up
          res.once('data', (c: Buffer) => {
            chunks.push(c);
            finish();
            req.destroy();
          });
          res.once('end', finish);
        } else {
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', finish);
        }
        res.on('close', () => {
          if (!res.complete)
            settle(() =>
              reject(
                new Error(
                  `response cut off after ${Buffer.concat(chunks).length} bytes (status ${status})\n${describeReq(r)}`,
                ),
              ),
            );
        });
        res.on('error', () => {});
      },
    );
    req.on('error', (e) => settle(() => reject(new Error(`no response: ${e.message}\n${describeReq(r)}`))));
    const timer = setTimeout(() => {
      settle(() => reject(new Error(`no response within 15 s (hang)\n${describeReq(r)}`)));
      req.destroy();
    }, 15_000);
    if (r.chunked && r.body !== undefined) {
      for (let i = 0; i < r.body.length; i += 65_536) req.write(r.body.subarray(i, i + 65_536));
      req.end();
    } else req.end(r.body);
  });
}

const trunc = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

function previewBytes(b: Buffer, n = 300): string {
  const text = b.toString('utf8');
  if (!text.includes('\ufffd') && !hasControl(text)) return JSON.stringify(trunc(text, n));
  return `hex:${b.subarray(0, n).toString('hex')}${b.length > n ? `… (${b.length} bytes)` : ''}`;
}

function describeReq(r: WireRequest): string {
  const body =
    r.body === undefined
      ? '(no body)'
      : `${previewBytes(r.body)} [${r.body.length} bytes${r.chunked ? ', sent chunked' : ''}]`;
  return `  ${r.method} ${trunc(r.path, 300)}\n  headers: ${trunc(JSON.stringify(r.headers), 600)}\n  body: ${body}${r.label ? `\n  body made as: ${trunc(r.label, 400)}` : ''}`;
}

// ---------------------------------------------------------------------------------------------------------------
// the properties every response must have

const ERROR_STATUS: Record<string, number> = {
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  idempotency_mismatch: 422,
  rate_limited: 429,
};
const STACK_LINE = /^ {4}at /m;
const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function errorShapeProblem(json: unknown, status: number): string | null {
  if (!isObj(json)) return 'the error body is not a JSON object';
  const keys = Object.keys(json);
  if (keys.length !== 1 || keys[0] !== 'error')
    return `the error body has top-level keys ${JSON.stringify(keys)}, not just "error"`;
  const e = json.error;
  if (!isObj(e)) return '"error" is not an object';
  const extra = Object.keys(e).filter((k) => !['code', 'message', 'details'].includes(k));
  if (extra.length) return `"error" has unexpected keys ${JSON.stringify(extra)}`;
  if (typeof e.code !== 'string') return '"error.code" is not a string';
  if (typeof e.message !== 'string') return '"error.message" is not a string';
  const expected = ERROR_STATUS[e.code];
  if (expected === undefined) return `"error.code" ${JSON.stringify(e.code)} is not a SPEC error code`;
  if (expected !== status && !(status === 415 && e.code === 'invalid_request'))
    return `status ${status} does not fit error code ${e.code} (${expected})`;
  return null;
}

function genericProblems(r: WireRequest, res: WireResponse): string[] {
  const p: string[] = [];
  if (res.status >= 500) p.push(`status ${res.status} (>= 500)`);
  if (STACK_LINE.test(res.text)) p.push('a stack trace in the body');
  const jsonType = /json/i.test(String(res.headers['content-type'] ?? ''));
  if (jsonType && r.method !== 'HEAD' && res.text.length > 0 && res.json === undefined)
    p.push('a JSON content-type with a body that is not JSON');
  if ((res.status < 200 || res.status >= 300) && r.method !== 'HEAD' && res.text.length > 0) {
    if (res.json === undefined) p.push('a non-2xx body that is not JSON (SPEC: every error is {"error":{...}})');
    else {
      const shape = errorShapeProblem(res.json, res.status);
      if (shape) p.push(shape);
    }
  }
  return p;
}

type Oracle = (res: WireResponse) => string | null | undefined | false;

/**
 * Requests Node's HTTP parser itself refuses (raw non-ASCII bytes in the request target, a method it does not know,
 * more than its 16 KiB of request line and headers): it answers 400 or 431 with no body and closes the connection, so
 * a client still sending a body may see a reset instead. They never reach the app: only the generic properties apply.
 */
const HTTP_METHODS = new Set(http.METHODS);
const headBytes = (r: WireRequest) =>
  r.path.length + Object.entries(r.headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
const httpMalformed = (r: WireRequest) =>
  /[\u0080-\uffff]/.test(r.path) || !HTTP_METHODS.has(r.method) || headBytes(r) > 15 * 1024;
/** A path with a broken percent-escape (`%zz`, `%E0%A4%A`): a malformed URL, 400 whatever it names. */
const badPercent = (r: WireRequest) =>
  r.path
    .split('?')[0]!
    .split('/')
    .some((part) => {
      try {
        decodeURIComponent(part);
        return false;
      } catch {
        return true;
      }
    });

/** Sends, then checks the generic properties and the case's own expectation; throws a repro when one fails. */
async function exchange(r: WireRequest, oracle?: Oracle): Promise<WireResponse> {
  let res: WireResponse;
  try {
    res = await send(r);
  } catch (e) {
    if (httpMalformed(r) && /^no response: (read ECONNRESET|write EPIPE|socket hang up)/.test((e as Error).message))
      return { status: 0, headers: {}, text: '', json: undefined, sse: false };
    throw e;
  }
  const problems = genericProblems(r, res);
  // a raw `#` in any generated part makes the whole target carry a fragment: refused before routing or auth
  const own = httpMalformed(r)
    ? null
    : r.path.includes('#')
      ? expectStatus([400], 'invalid_request')(res)
      : badPercent(r)
        ? null
        : oracle?.(res);
  if (own) problems.push(own);
  if (problems.length)
    throw new Error(
      `${problems.join('; ')}\n${describeReq(r)}\n  → ${res.status} ${res.headers['content-type'] ?? ''} ${trunc(res.text, 500)}`,
    );
  return res;
}

const errCode = (res: WireResponse) => (isObj(res.json) && isObj(res.json.error) ? res.json.error.code : undefined);
const expectStatus =
  (allowed: readonly number[], code?: string): Oracle =>
  (res) => {
    if (!allowed.includes(res.status)) return `expected status ${allowed.join(' or ')}, got ${res.status}`;
    if (code && res.status >= 400 && errCode(res) !== code)
      return `expected error code ${code}, got ${String(errCode(res))}`;
    return null;
  };

// ---------------------------------------------------------------------------------------------------------------
// generators: labelled values so fast-check's counterexamples stay short

function labelled<T extends object>(obj: T, label: string): T {
  Object.defineProperty(obj, fc.toStringMethod, { value: () => label, enumerable: false });
  Object.defineProperty(obj, 'toString', { value: () => label, enumerable: false });
  return obj;
}

function stringify(v: unknown): string {
  try {
    return JSON.stringify(v) ?? 'null';
  } catch {
    return '{"unserializable":true}';
  }
}

/** A body: how to make its bytes, and the statuses POST /v1/runs may answer it with (plain JSON headers, tenant a). */
interface BodySpec {
  label: string;
  bytes: () => Buffer | undefined;
  runExpect: readonly number[] | null;
  validRun: boolean;
  huge?: boolean;
}
function bodySpec(
  label: string,
  bytes: () => Buffer | undefined,
  runExpect: readonly number[] | null,
  validRun = false,
  huge = false,
): BodySpec {
  return labelled({ label, bytes, runExpect, validRun, huge }, `body(${label})`);
}
function jsonSpec(v: unknown, runExpect: readonly number[] | null, validRun = false): BodySpec {
  const text = stringify(v);
  return bodySpec(`json ${trunc(text, 300)}`, () => Buffer.from(text), runExpect, validRun);
}
function textSpec(label: string, text: string, runExpect: readonly number[] | null, validRun = false): BodySpec {
  return bodySpec(label, () => Buffer.from(text), runExpect, validRun);
}

/** A copy of `base` with `value` as an own property at `path` (creating containers; `__proto__` is a plain key here). */
function withValueAt(base: unknown, path: ReadonlyArray<string | number>, value: unknown): Record<string, unknown> {
  const root = JSON.parse(JSON.stringify(base)) as Record<string, unknown>;
  let cur: Record<string | number, unknown> = root;
  const define = (o: Record<string | number, unknown>, k: string | number, v: unknown) =>
    Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  for (let i = 0; i < path.length - 1; i++) {
    const k = path[i]!;
    const next = Object.prototype.hasOwnProperty.call(cur, k) ? cur[k] : undefined;
    if (next === null || typeof next !== 'object') define(cur, k, typeof path[i + 1] === 'number' ? [] : {});
    cur = cur[k] as Record<string | number, unknown>;
  }
  define(cur, path[path.length - 1]!, value);
  return root;
}

const VALID_MODEL = { provider: 'openai', name: 'gpt-4o-mini' };
const MODELS = [
  VALID_MODEL,
  { provider: 'openai', name: 'gpt-4o-mini', contextWindow: 128000, params: { temperature: 0 } },
  { provider: 'deepseek', name: 'deepseek-chat' },
  { provider: 'google', name: 'gemini-2.5-flash' },
];

const userMsg = fc.record({ role: fc.constant('user'), content: fc.string({ maxLength: 20, unit: 'binary' }) });
const validRunValue = fc.record(
  {
    input: fc.oneof(
      fc.string({ minLength: 1, maxLength: 40, unit: 'binary' }),
      fc.array(userMsg, { minLength: 1, maxLength: 4 }),
    ),
    model: fc.constantFrom(...MODELS),
    system: fc.string({ maxLength: 30 }),
    mode: fc.constantFrom('interactive', 'headless'),
    strategy: fc.constantFrom('function_calling', 'react'),
    metadata: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
    limits: fc.record(
      {
        maxIterations: fc.integer({ min: 1, max: 200 }),
        onMaxIterations: fc.constantFrom('finalize', 'fail'),
        repeatLimit: fc.integer({ min: 2, max: 100 }),
      },
      { requiredKeys: [] },
    ),
    tools: fc.subarray(['calculator', 'current_time', 'lookup']),
  },
  { requiredKeys: ['input', 'model'] },
);
const validRunBody = validRunValue.map((v) => jsonSpec(v, [202], true));

// wrong types, field by field (SPEC §2 RunRequest)
const jStr = fc.string({ maxLength: 12 });
const jNum = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }));
const jBool = fc.boolean();
const jNull = fc.constant(null);
const jArr = fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 });
const jObj = fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
const notString = fc.oneof(jNum, jBool, jNull, jArr, jObj);
const notNumber = fc.oneof(jStr, jBool, jNull, jArr, jObj);
const notObject = fc.oneof(jStr, jNum, jBool, jNull, jArr);
const notArray = fc.oneof(jStr, jNum, jBool, jNull, jObj);
const notEnum = (values: string[]) =>
  fc.oneof(
    notString,
    jStr.filter((s) => !values.includes(s)),
  );
const nonInteger = fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isInteger(x));
const notIntIn = (min: number, max: number) =>
  fc.oneof(
    notNumber,
    nonInteger,
    fc.nat().map((n) => min - 1 - n),
    fc.nat().map((n) => max + 1 + n),
  );
const notPositiveIntOrNull = fc.oneof(jStr, jBool, jArr, jObj, nonInteger, fc.integer({ max: 0 }));
const notArrayOf = (wrongItem: fc.Arbitrary<unknown>) =>
  fc.oneof(notArray, fc.array(wrongItem, { minLength: 1, maxLength: 2 }));

const FIELDS: Array<[path: Array<string | number>, wrong: fc.Arbitrary<unknown>]> = [
  [
    ['input'],
    fc.oneof(
      jNum,
      jBool,
      jNull,
      jObj,
      fc.constant(''),
      fc.constant([]),
      fc.array(notObject, { minLength: 1, maxLength: 3 }),
    ),
  ],
  [['system'], notString],
  [['model'], notObject],
  [['model', 'provider'], notEnum(['openai', 'google', 'deepseek', 'openai-compatible'])],
  [['model', 'name'], fc.oneof(notString, fc.constant(''))],
  [['model', 'contextWindow'], notIntIn(1024, 10_000_000)],
  [['model', 'params'], notObject],
  [['fallbacks'], notArrayOf(notObject)],
  [['tools'], fc.oneof(notArrayOf(notString), fc.constant(['not a tool name!']))],
  [['clientTools'], notArrayOf(notObject)],
  [['strategy'], notEnum(['function_calling', 'react'])],
  [['mode'], notEnum(['interactive', 'headless'])],
  [['limits'], notObject],
  [['limits', 'maxIterations'], notIntIn(1, 200)],
  [['limits', 'onMaxIterations'], notEnum(['finalize', 'fail'])],
  [['limits', 'maxTotalTokens'], notPositiveIntOrNull],
  [
    ['limits', 'maxCostUsd'],
    fc.oneof(jStr, jBool, jArr, jObj, fc.double({ max: 0, noNaN: true, noDefaultInfinity: true })),
  ],
  [['limits', 'maxWallMs'], notPositiveIntOrNull],
  [['limits', 'maxToolCalls'], notPositiveIntOrNull],
  [['limits', 'repeatLimit'], notIntIn(2, 100)],
  [['approval'], notObject],
  [['approval', 'require'], notArrayOf(notString)],
  [['approval', 'autoApprove'], notArrayOf(notString)],
  [['approval', 'timeoutMs'], notIntIn(1000, 30 * 86_400_000)],
  [['approval', 'onTimeout'], notEnum(['deny', 'fail'])],
  [['context'], notObject],
  [
    ['context', 'compressAt'],
    fc.oneof(
      notNumber,
      fc.double({ max: 0, noNaN: true, noDefaultInfinity: true }),
      fc.double({ min: 1, minExcluded: true, noNaN: true, noDefaultInfinity: true }),
    ),
  ],
  [['context', 'compression'], notEnum(['summarize', 'prune', 'off'])],
  [['context', 'toolResultMaxTokens'], notIntIn(100, 1_000_000)],
  [['metadata'], notObject],
];
/** RunRequest fields the SPEC defines that have their own rules (threads, structured output, webhooks). */
const SPEC_FIELDS: Array<[path: Array<string | number>, wrong: fc.Arbitrary<unknown>]> = [
  [['threadId'], fc.oneof(notString, fc.constantFrom('', 'a/b', 'no spaces', 'x'.repeat(129), 'ünï'))],
  [['output'], notObject],
  [['output', 'schema'], notObject],
  // no tenant of this stack has a webhook secret: any notify is 400, and these are bad on their own too
  [
    ['notify'],
    fc.oneof(
      notObject,
      fc.record({
        url: fc.oneof(
          notString,
          fc.constantFrom('ftp://example.com/h', 'http://127.0.0.1/hook', 'http://169.254.169.254/latest', 'not a url'),
        ),
      }),
    ),
  ],
];
const wrongTypeBody = fc
  .constantFrom(...FIELDS)
  .chain(([path, wrong]) =>
    wrong.map((w) => jsonSpec(withValueAt({ input: 'hello', model: VALID_MODEL }, path, w), [400])),
  );

// prototype pollution
const PROTO_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  'valueOf',
  '__defineGetter__',
  'isPrototypeOf',
  'toJSON',
  'length',
];
const PROTO_PAYLOADS = [
  '{"polluted_by_fuzz":"yes"}',
  '{"__proto__":{"polluted_by_fuzz":"yes"}}',
  '{"prototype":{"polluted_by_fuzz":"yes"}}',
  '{"constructor":{"prototype":{"polluted_by_fuzz":"yes"}}}',
  '{"toString":"x","valueOf":1,"hasOwnProperty":null}',
  '{"length":1000000000}',
  '"polluted_by_fuzz"',
  '1',
  'null',
  '[]',
  '[{"__proto__":{"polluted_by_fuzz":"yes"}}]',
];
const PROTO_LOCATIONS: Array<Array<string | number>> = [
  [],
  ['model'],
  ['model', 'params'],
  ['limits'],
  ['approval'],
  ['context'],
  ['metadata'],
  ['metadata', 'nested'],
  ['input', 0],
  ['input', 0, 'providerData'],
  ['clientTools', 0],
  ['clientTools', 0, 'parameters'],
  ['clientTools', 0, 'parameters', 'properties'],
  ['fallbacks', 0],
];
const PROTO_BASE = {
  input: [{ role: 'user', content: 'hi' }],
  model: { ...VALID_MODEL, params: { temperature: 0 } },
  clientTools: [{ name: 'pick_file', parameters: { type: 'object', properties: {} } }],
  fallbacks: [{ provider: 'deepseek', name: 'deepseek-chat' }],
  limits: {},
  approval: {},
  context: {},
  metadata: { nested: {} },
};
const protoBody = fc
  .array(
    fc.tuple(fc.constantFrom(...PROTO_LOCATIONS), fc.constantFrom(...PROTO_KEYS), fc.constantFrom(...PROTO_PAYLOADS)),
    { minLength: 1, maxLength: 3 },
  )
  .map((injections) => {
    let v: unknown = PROTO_BASE;
    for (const [loc, key, payload] of injections) v = withValueAt(v, [...loc, key], JSON.parse(payload));
    return jsonSpec(v, [202, 400]);
  });

// nesting
type DeepShape = 'arrays' | 'objects' | 'unbalanced' | 'metadata' | 'metadata-objects' | 'in-input-array' | 'in-string';
const depthArb = fc.oneof(
  fc.integer({ min: 1, max: 64 }),
  fc.integer({ min: 60, max: 70 }),
  fc.integer({ min: 65, max: 20_000 }),
  fc.constant(10_000),
  fc.constant(100_000),
);
function deepSpec(shape: DeepShape, n: number): BodySpec {
  const model = JSON.stringify(VALID_MODEL);
  const arrays = () => '['.repeat(n) + ']'.repeat(n);
  const objects = () => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
  // total depth of the body: SPEC "nested deeper than 64 levels is 400"; `{}` is one level
  const metaExpect = (total: number) => (total <= 64 ? [202] : total >= 66 ? [400] : [202, 400]);
  const make: Record<DeepShape, [() => string, readonly number[]]> = {
    arrays: [arrays, [400]],
    objects: [objects, [400]],
    unbalanced: [() => '['.repeat(n), [400]],
    metadata: [() => `{"input":"deep","model":${model},"metadata":{"d":${arrays()}}}`, metaExpect(n + 2)],
    'metadata-objects': [() => `{"input":"deep","model":${model},"metadata":${objects()}}`, metaExpect(n + 1)],
    'in-input-array': [() => `{"input":[${arrays()}],"model":${model}}`, [400]],
    'in-string': [() => `{"input":"${'['.repeat(n)}","model":${model}}`, [202]],
  };
  const [text, expectRun] = make[shape];
  return bodySpec(`${shape} nested ${n} levels`, () => Buffer.from(text()), expectRun);
}
const deepBody = fc
  .tuple(
    fc.constantFrom<DeepShape>(
      'arrays',
      'objects',
      'unbalanced',
      'metadata',
      'metadata-objects',
      'in-input-array',
      'in-string',
    ),
    depthArb,
  )
  .map(([s, n]) => deepSpec(s, n));
/** Strings full of brackets, quotes and backslashes: no nesting at all, whatever a text scanner thinks. */
const trickyStringBody = fc
  .tuple(
    fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', ':', ','), minLength: 1, maxLength: 400 }),
    fc.dictionary(
      fc.string({ unit: fc.constantFrom('[', '{', '"', '\\'), maxLength: 80 }),
      fc.string({ unit: fc.constantFrom('[', '{', '"', '\\', '}'), maxLength: 80 }),
      { maxKeys: 3 },
    ),
  )
  .map(([input, metadata]) => jsonSpec({ input, model: VALID_MODEL, metadata }, [202], true));

// bad UTF-8
const BAD_UTF8 = [
  [0xff],
  [0xfe, 0xff],
  [0xc3, 0x28],
  [0xa0, 0xa1],
  [0xe2, 0x28, 0xa1],
  [0xe2, 0x82],
  [0xed, 0xa0, 0x80],
  [0xc0, 0xaf],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0x80],
  [0xf4, 0x90, 0x80, 0x80],
];
const badUtf8Body = fc
  .record({
    seqs: fc.array(fc.constantFrom(...BAD_UTF8), { minLength: 1, maxLength: 5 }),
    where: fc.constantFrom('input', 'system', 'metadata-key', 'outside', 'raw'),
    raw: fc.uint8Array({ maxLength: 64 }),
  })
  .map(({ seqs, where, raw }) => {
    const bad = Buffer.from(seqs.flat());
    const model = JSON.stringify(VALID_MODEL);
    const parts: Record<string, [string, string, readonly number[]]> = {
      input: ['{"input":"a', `b","model":${model}}`, [202, 400]],
      system: [`{"input":"a","model":${model},"system":"`, '"}', [202, 400]],
      'metadata-key': [`{"input":"a","model":${model},"metadata":{"`, '":1}}', [202, 400]],
      outside: ['{"input":"a"', `,"model":${model}}`, [400]],
    };
    if (where === 'raw')
      return bodySpec(`raw bytes hex:${Buffer.from(raw).toString('hex')}`, () => Buffer.from(raw), [400]);
    const [pre, post, exp] = parts[where]!;
    const bytes = Buffer.concat([Buffer.from(pre), bad, Buffer.from(post)]);
    return bodySpec(`invalid UTF-8 in ${where}: hex:${bytes.toString('hex')}`, () => bytes, exp);
  });

const emptyBody = fc.constantFrom(
  bodySpec('no body at all', () => undefined, [400]),
  bodySpec('empty (0 bytes)', () => Buffer.alloc(0), [400]),
  textSpec('whitespace only', ' \r\n\t ', [400]),
  textSpec('null', 'null', [400]),
  textSpec('{}', '{}', [400]),
  textSpec('[]', '[]', [400]),
  textSpec('""', '""', [400]),
);

const malformedBody = fc.oneof(
  validRunValue.chain((v) => {
    const t = JSON.stringify(v);
    return fc
      .integer({ min: 1, max: t.length - 1 })
      .map((i) => textSpec(`truncated ${trunc(t.slice(0, i), 200)}`, t.slice(0, i), [400]));
  }),
  fc
    .tuple(validRunValue, fc.constantFrom('x', '}', ']', ',', '{}', 'null', '/*c*/', '\u0000'))
    .map(([v, g]) => textSpec(`trailing ${JSON.stringify(g)}`, JSON.stringify(v) + g, [400])),
  fc
    .constantFrom(
      "{'input':'x'}",
      '{"input":NaN}',
      '{input:"x"}',
      '{"input":"x",}',
      '[1,]',
      'undefined',
      'NaN',
      '{"a":1}{"b":2}',
      '\u0000',
      '{"input":"\u0001"}',
      '"unterminated',
      '{"input":"x"',
      '01',
      '-',
      '1e',
      'tru',
      '{"__proto__":}',
      '\\u0000',
    )
    .map((t) => textSpec(`malformed ${JSON.stringify(t)}`, t, [400])),
  validRunValue.map((v) => textSpec('BOM + valid JSON', `\ufeff${JSON.stringify(v)}`, [202, 400])),
);

// many messages
type ManyPattern =
  'users' | 'pairs' | 'toolcalls' | 'wide' | 'unanswered' | 'dup-ids' | 'ends-assistant' | 'random-roles';
function manySpec(pattern: ManyPattern, n: number, seed: number): BodySpec {
  const build = (): unknown[] => {
    const m: unknown[] = [];
    let rnd = seed >>> 0;
    const next = () => (rnd = (Math.imul(rnd, 1103515245) + 12345) >>> 0);
    if (pattern === 'wide') {
      // one turn that called n - 2 tools at once, every call answered
      const ids = Array.from({ length: Math.max(1, n - 2) }, (_, i) => `w${i}`);
      return [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, toolCalls: ids.map((id) => ({ id, name: 'lookup', arguments: '{}' })) },
        ...ids.map((id) => ({ role: 'tool', toolCallId: id, content: 'r' })),
      ];
    }
    for (let i = 0; m.length < n; i++) {
      if (pattern === 'users') m.push({ role: 'user', content: `m${i}` });
      else if (pattern === 'pairs')
        m.push(i % 2 ? { role: 'assistant', content: `a${i}` } : { role: 'user', content: `u${i}` });
      else if (pattern === 'toolcalls' || pattern === 'unanswered' || pattern === 'dup-ids') {
        const id = pattern === 'dup-ids' ? 'c1' : `c${i}`;
        m.push({ role: 'assistant', content: null, toolCalls: [{ id, name: 'lookup', arguments: '{}' }] });
        if (pattern !== 'unanswered' || i % 7) m.push({ role: 'tool', toolCallId: id, content: 'r' });
      } else if (pattern === 'ends-assistant')
        m.push(m.length === n - 1 ? { role: 'assistant', content: 'end' } : { role: 'user', content: `u${i}` });
      else
        m.push({
          role: ['system', 'user', 'assistant', 'tool', 'robot'][next() % 5],
          content: next() % 3 ? `x${i}` : null,
          ...(next() % 4 ? {} : { toolCallId: `c${next() % 10}` }),
        });
    }
    if (pattern === 'toolcalls' && m.length > n) m.length = Math.max(2, n % 2 ? n - 1 : n); // keep whole call + answer pairs
    if (pattern === 'pairs' && n % 2 === 0) m.push({ role: 'user', content: 'last' }); // end with user
    return m;
  };
  const input = build();
  // one call answered once is a valid transcript even with the 'dup-ids' pattern
  const valid =
    pattern === 'users' ||
    pattern === 'pairs' ||
    pattern === 'toolcalls' ||
    pattern === 'wide' ||
    (pattern === 'dup-ids' && input.length <= 2);
  const bytes = Buffer.from(JSON.stringify({ input, model: VALID_MODEL }));
  const runExpect =
    bytes.length > MiB
      ? [413]
      : pattern === 'random-roles'
        ? [202, 400]
        : !valid
          ? [400]
          : n <= 5000
            ? [202]
            : [202, 400];
  return bodySpec(
    `${n} messages, ${pattern} (${bytes.length} bytes)`,
    () => bytes,
    runExpect,
    valid && n <= 5000 && bytes.length <= MiB,
  );
}
const manyPatternArb = fc.constantFrom<ManyPattern>(
  'users',
  'pairs',
  'toolcalls',
  'wide',
  'unanswered',
  'dup-ids',
  'ends-assistant',
  'random-roles',
);
const manyBody = fc.oneof(
  fc
    .tuple(
      fc.oneof(
        { weight: 3, arbitrary: fc.constant<ManyPattern>('toolcalls') },
        { weight: 5, arbitrary: manyPatternArb },
      ),
      fc.oneof(
        fc.integer({ min: 1000, max: 5000 }),
        fc.integer({ min: 5000, max: 14_000 }),
        fc.integer({ min: 9990, max: 10_010 }),
        fc.constant(20_000),
      ),
      fc.nat(),
    )
    .map(([p, n, s]) => manySpec(p, n, s)),
  // thousands of parallel calls in one turn
  fc
    .tuple(
      fc.oneof(
        fc.integer({ min: 3, max: 3000 }),
        fc.integer({ min: 7900, max: 8200 }),
        fc.integer({ min: 8000, max: 12_000 }),
      ),
      fc.nat(),
    )
    .map(([n, s]) => manySpec('wide', n, s)),
);
const fewMessagesBody = fc
  .tuple(manyPatternArb, fc.integer({ min: 1, max: 300 }), fc.nat())
  .map(([p, n, s]) => manySpec(p, n, s));

// decisions
const decisionItem = (callIds: string[]) =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record(
        {
          callId: fc.oneof(fc.constantFrom(...callIds), fc.string({ maxLength: 30, unit: 'binary' }), fc.constant('')),
          action: fc.oneof(
            fc.constantFrom('approve', 'deny', 'submit_result'),
            fc.constantFrom('APPROVE', 'reject', '', 'approve '),
          ),
          arguments: fc.oneof(jObj, fc.jsonValue({ maxDepth: 3 }), fc.constant({ to: 'x@y.z', body: 'edited' })),
          reason: fc.oneof(fc.string(), fc.integer(), fc.constant('r'.repeat(10_001))),
          result: fc.jsonValue({ maxDepth: 3 }),
          isError: fc.oneof(fc.boolean(), fc.string({ maxLength: 3 })),
        },
        { requiredKeys: ['callId', 'action'] },
      ),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  );
const decisionValue = (callIds: string[]) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.record({ decisions: fc.array(decisionItem(callIds), { maxLength: 4 }) }) },
    { weight: 1, arbitrary: fc.record({ decisions: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }) },
    {
      weight: 1,
      arbitrary: fc.constant({
        decisions: Array.from({ length: 201 }, (_, i) => ({ callId: `c${i}`, action: 'deny' })),
      }),
    },
  );
const decisionBody = (callIds: string[]) => decisionValue(callIds).map((v) => jsonSpec(v, [400]));

// random JSON
const plainObjectOrNot = (text: string) => (isObj(parseJson(text)) ? [202, 400] : [400]);
const randomJsonBody = fc.oneof(
  fc.jsonValue({ maxDepth: 6 }).map((v) => jsonSpec(v, isObj(v) ? [202, 400] : [400])),
  fc.json({ maxDepth: 5 }).map((t) => textSpec(`json ${trunc(t, 300)}`, t, plainObjectOrNot(t))),
  fc
    .anything({
      maxDepth: 4,
      withNullPrototype: true,
      withObjectString: true,
      withBoxedValues: true,
      withMap: true,
      withSet: true,
      withSparseArray: true,
      withTypedArray: true,
      withDate: true,
    })
    .map((v) => {
      const t = stringify(v);
      return textSpec(`anything ${trunc(t, 300)}`, t, plainObjectOrNot(t));
    }),
);

// huge
type HugeKind = 'over' | 'under' | 'under-multibyte' | 'over-junk' | 'gzip-bomb';
function sizedRun(size: number, unit: 'x' | 'é'): Buffer {
  const pre = Buffer.from(`{"input":"big","model":${JSON.stringify(VALID_MODEL)},"metadata":{"blob":"`);
  const post = Buffer.from('"}}');
  const room = size - pre.length - post.length;
  const fill =
    unit === 'x'
      ? Buffer.alloc(room, 'x')
      : Buffer.concat([Buffer.from('é'.repeat(Math.floor(room / 2))), Buffer.alloc(room % 2, 'x')]);
  return Buffer.concat([pre, fill, post]);
}
function hugeSpec(kind: HugeKind, size: number): BodySpec {
  const spec: Record<HugeKind, [() => Buffer, readonly number[]]> = {
    over: [() => sizedRun(size, 'x'), [413]],
    under: [() => sizedRun(size, 'x'), [202]],
    'under-multibyte': [() => sizedRun(size, 'é'), [202]],
    'over-junk': [() => Buffer.alloc(size, 'z'), [413]],
    'gzip-bomb': [() => gzipSync(sizedRun(size, 'x')), [400, 413]],
  };
  const [bytes, exp] = spec[kind];
  return bodySpec(
    `${kind}: ${size} bytes${kind === 'gzip-bomb' ? ' before gzip' : ''}`,
    bytes,
    exp,
    kind === 'under' || kind === 'under-multibyte',
    true,
  );
}
const hugeBody = fc
  .oneof(
    fc.tuple(
      fc.constant<HugeKind>('over'),
      fc.oneof(fc.constant(MiB + 1), fc.integer({ min: MiB + 1, max: MiB + 300_000 })),
    ),
    fc.tuple(fc.constant<HugeKind>('under'), fc.oneof(fc.constant(MiB), fc.integer({ min: MiB - 300_000, max: MiB }))),
    fc.tuple(fc.constant<HugeKind>('under-multibyte'), fc.integer({ min: MiB - 1000, max: MiB })),
    fc.tuple(fc.constant<HugeKind>('over-junk'), fc.integer({ min: MiB + 1, max: 3 * MiB })),
    fc.tuple(fc.constant<HugeKind>('gzip-bomb'), fc.integer({ min: 2 * MiB, max: 16 * MiB })),
  )
  .map(([k, n]) => hugeSpec(k, n));

/** Any body but the huge ones (those have their own test). */
const anyBody = (callIds: string[]) =>
  fc.oneof(
    { weight: 4, arbitrary: validRunBody },
    { weight: 3, arbitrary: randomJsonBody },
    { weight: 2, arbitrary: protoBody },
    { weight: 2, arbitrary: wrongTypeBody },
    { weight: 1, arbitrary: deepBody },
    { weight: 1, arbitrary: trickyStringBody },
    { weight: 1, arbitrary: badUtf8Body },
    { weight: 1, arbitrary: emptyBody },
    { weight: 2, arbitrary: malformedBody },
    { weight: 1, arbitrary: fewMessagesBody },
    { weight: 2, arbitrary: decisionBody(callIds) },
  );

// headers
interface CtSpec {
  value: string | undefined;
  /** true: a JSON media type the server must decode; false: a body it cannot decode (400 or 415); null: either. */
  ok: boolean | null;
  transform: (b: Buffer) => Buffer;
}
const same = (b: Buffer) => b;
const toUtf16 = (b: Buffer) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(b.toString('utf8'), 'utf16le')]);
const ct = (value: string | undefined, ok: boolean | null, transform = same): CtSpec =>
  labelled(
    { value, ok, transform },
    `content-type ${JSON.stringify(value)}${transform === same ? '' : ' (body as UTF-16)'}`,
  );
const CONTENT_TYPES: CtSpec[] = [
  ct('application/json', true),
  ct('application/json; charset=utf-8', true),
  ct('application/json; charset=UTF-8', true),
  ct('application/json; charset=latin1', true), // UTF-8 bytes read as Latin-1: still the same JSON structure
  ct('application/json; charset=iso-8859-1', true),
  ct('application/json; charset=utf-16', null, toUtf16),
  ct('application/json; charset=utf-16', null), // mislabelled
  ct('application/json; charset=x-bogus', false),
  ct('application/json; charset=ebcdic-cp-zz', false),
  ct('application/json; charset="utf-8"', null),
  ct('text/plain', null),
  ct('text/plain; charset=x-bogus', false),
  ct('application/xml', false),
  ct('application/xml; charset=utf-8', false),
  ct('text/xml', false),
  ct('multipart/form-data; boundary=x', false),
  ct('application/x-www-form-urlencoded', false),
  ct('image/png', false),
  ct(undefined, null),
  ct('application/vnd.api+json', null),
  ct('', null),
  ct('application/json; charset=utf-8; foo=bar', null),
  ct(';;;', null),
  ct('APPLICATION/JSON', null),
];
const contentTypeArb = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40, unit: 'binary' }).map((s) => ct(s, null)) },
);
const jsonCt = CONTENT_TYPES[0]!;

interface EncSpec {
  value: string | undefined;
  ok: boolean | null;
  apply: (b: Buffer) => Buffer;
}
const enc = (value: string | undefined, ok: boolean | null, apply: (b: Buffer) => Buffer, how: string): EncSpec =>
  labelled({ value, ok, apply }, `content-encoding ${JSON.stringify(value)} (${how})`);
const ENCODINGS: EncSpec[] = [
  enc(undefined, true, same, 'plain'),
  enc('identity', true, same, 'plain'),
  enc('gzip', true, (b) => gzipSync(b), 'gzipped'),
  enc('gzip', false, same, 'not gzipped'),
  enc('gzip', false, (b) => gzipSync(b).subarray(0, 12), 'truncated gzip'),
  enc('deflate', true, (b) => deflateSync(b), 'deflated'),
  enc('deflate', false, same, 'not deflated'),
  enc('br', true, (b) => brotliCompressSync(b), 'brotli'),
  enc('br', null, same, 'not brotli'),
  enc('zstd', null, (b) => zstdCompressSync(b), 'zstd'),
  enc('x-foo', false, same, 'plain'),
  enc('compress', false, same, 'plain'),
  enc('GZIP', null, (b) => gzipSync(b), 'gzipped'),
  enc('gzip, gzip', null, (b) => gzipSync(gzipSync(b)), 'gzipped twice'),
  enc('gzip, br', null, (b) => brotliCompressSync(gzipSync(b)), 'gzip then brotli'),
  enc('', null, same, 'plain'),
];
const encodingArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant(ENCODINGS[0]!) },
  { weight: 4, arbitrary: fc.constantFrom(...ENCODINGS) },
);

interface AuthSpec {
  value: string | undefined;
  /** The tenant the server must see; 'none': surely 401; null: unclear. */
  tenant: 'a' | 'b' | 'none' | null;
}
const auth = (value: string | undefined, tenant: AuthSpec['tenant']): AuthSpec =>
  labelled({ value, tenant }, `authorization ${JSON.stringify(value)}`);
const AUTH_A = auth('Bearer key-a', 'a');
const AUTH_B = auth('Bearer key-b', 'b');
const BAD_AUTHS: AuthSpec[] = [
  auth(undefined, 'none'),
  auth('', 'none'),
  auth('Bearer key-c', 'none'),
  auth('Bearer key-a-but-longer', 'none'),
  auth('Basic a2V5LWE6', 'none'),
  auth('Token key-a', 'none'),
  auth('key-a', 'none'),
  auth('Bearer', 'none'),
  auth('Bearer ключ-🔑', 'none'),
  auth(`Bearer ${'k'.repeat(5000)}`, 'none'),
];
const ODD_AUTHS: AuthSpec[] = [
  auth('bearer key-a', null),
  auth('BEARER key-a', null),
  auth('Bearer  key-a ', null),
  auth('Bearer KEY-A', null),
  auth('Bearer key-a, Bearer key-b', null),
  auth('Bearer key-a key-b', null),
];
const authArbOf = (withB: boolean) =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant(AUTH_A) },
    { weight: withB ? 2 : 0, arbitrary: fc.constant(AUTH_B) },
    { weight: 3, arbitrary: fc.constantFrom(...BAD_AUTHS) },
    { weight: 1, arbitrary: fc.constantFrom(...ODD_AUTHS) },
    { weight: 1, arbitrary: fc.string({ maxLength: 40, unit: 'binary' }).map((s) => auth(s, null)) },
  );
const authArb = authArbOf(true);
/** For requests that change runs: tenant b's fixtures must stay as they are (only tenant a acts on them). */
const authNoBArb = authArbOf(false);

const idemArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', 'k'.repeat(255), 'k'.repeat(256), 'k'.repeat(300), 'ключ-🔑-clé-鍵', ' ', '\t'),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 40, unit: 'binary' }) },
);

// paths and ids
type SegMode = 'encoded' | 'raw' | 'bytes';
const segModeArb = fc.constantFrom<SegMode>('encoded', 'raw', 'bytes');
/** One path segment or query value: percent-encoded, raw printable ASCII (so `/ ? # %` stay), or raw UTF-8 bytes. */
function seg(s: string, mode: SegMode): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    const hex = `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    if (b >= 0x21 && b <= 0x7e) out += mode === 'encoded' && !/[A-Za-z0-9_.~-]/.test(c) ? hex : c;
    else if (b >= 0x80 && mode === 'bytes') out += c;
    else out += hex;
  }
  return out;
}
const query = (pairs: Array<[string, string | undefined]>, mode: SegMode) => {
  const parts = pairs.filter((p): p is [string, string] => p[1] !== undefined).map(([k, v]) => `${k}=${seg(v, mode)}`);
  return parts.length ? `?${parts.join('&')}` : '';
};

const missingIdArb = fc.stringMatching(/^[A-Za-z0-9]{20}$/).map((s) => `run_${s}`);
const weirdIdArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom(
    '..',
    '.',
    '../..',
    '..%2f..',
    '%2e%2e',
    '%00',
    '%',
    '%zz',
    '%E0%A4%A',
    '%ff',
    '%c0%af',
    '\u2028',
    '🔥🔥',
    'üñí',
    '',
    ' ',
    'run_',
    'null',
    'undefined',
    '__proto__',
    'constructor',
    'toString',
    '*',
    'runs',
    '\\..\\',
    '%252e',
    'a;b',
    'a?b=c',
    'a#b',
  ),
  fc.integer({ min: 1000, max: 12_000 }).map((n) => 'r'.repeat(n)),
  fc.constant('x'.repeat(10_000)),
  fc.webSegment(),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);

interface IdSpec {
  id: string;
  /** Whose run it is: a, b, none (surely no run), or null (a weird string: whatever it routes to). */
  owner: 'a' | 'b' | 'none' | null;
  mode: SegMode;
}
const idSpec = (id: string, owner: IdSpec['owner'], mode: SegMode): IdSpec =>
  labelled({ id, owner, mode }, `id ${JSON.stringify(trunc(id, 80))} (${owner ?? 'weird'}, ${mode})`);
const idArb = (aIds: string[], bIds: string[]) =>
  fc
    .tuple(
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...aIds).map((id) => ['a', id] as const) },
        { weight: 2, arbitrary: fc.constantFrom(...bIds).map((id) => ['b', id] as const) },
        { weight: 2, arbitrary: missingIdArb.map((id) => ['none', id] as const) },
        { weight: 3, arbitrary: weirdIdArb.map((id) => [null, id] as const) },
      ),
      segModeArb,
    )
    .map(([[owner, id], mode]) => idSpec(id, owner, mode));

/** What a tenant may expect of a run id: its own run, or one it must not see (404). */
function relation(id: IdSpec, a: AuthSpec): 'own' | 'hidden' | 'unauthorized' | null {
  if (a.tenant === 'none') return 'unauthorized';
  if (a.tenant === null || id.owner === null) return null;
  return id.owner === a.tenant ? 'own' : 'hidden';
}

const lastEventIdArb = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '0',
      '1',
      '2',
      '3',
      '-1',
      '1.5',
      '1e3',
      ' 3 ',
      'abc',
      '',
      '٣',
      '0x10',
      '9'.repeat(15),
      '9'.repeat(16),
      '9'.repeat(30),
      'NaN',
      'Infinity',
      '+1',
      '00001',
      '1,2',
      '２',
    ),
  },
  { weight: 1, arbitrary: fc.nat({ max: 100 }).map(String) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20, unit: 'binary' }) },
);

function headersOf(a: AuthSpec, extra: Record<string, string | undefined> = {}): Record<string, string> {
  const h: Record<string, string> = {};
  if (a.value !== undefined) h.authorization = wireHeader(a.value);
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) h[k] = wireHeader(v);
  return h;
}

/** A request with a body: charset transform, then content encoding. */
function withBody(
  method: string,
  path: string,
  body: BodySpec,
  h: { ct: CtSpec; enc: EncSpec; auth: AuthSpec; idem?: string | undefined; extra?: Record<string, string> },
): WireRequest {
  const headers = headersOf(h.auth, { 'content-type': h.ct.value, 'idempotency-key': h.idem, ...h.extra });
  if (h.enc.value !== undefined) headers['content-encoding'] = h.enc.value;
  const raw = body.bytes();
  return {
    method,
    path,
    headers,
    body: raw === undefined ? undefined : h.enc.apply(h.ct.transform(raw)),
    label: `${body.label} | ${String(h.ct)} | ${String(h.enc)}`,
  };
}

/** Whether the server surely can decode the body as sent (a Content-Encoding on an empty body is not). */
const decodes = (raw: Buffer | undefined, h: { ct: CtSpec; enc: EncSpec }) =>
  h.ct.ok === true &&
  h.enc.ok === true &&
  ((raw !== undefined && raw.length > 0) || h.enc.value === undefined || h.enc.value === 'identity');

/** Whether the server surely cannot decode this body (SPEC: 400 or 415). */
const undecodable = (raw: Buffer | undefined, h: { ct: CtSpec; enc: EncSpec }) =>
  raw !== undefined && raw.length > 0 && raw[0]! >= 0x20 && raw[0]! < 0x7f && (h.ct.ok === false || h.enc.ok === false);

// ---------------------------------------------------------------------------------------------------------------

interface Fixtures {
  aDone: string;
  aDoneLastSeq: number;
  aPaused: string; // events (live stream), calls, later cancel
  aPausedCall: string;
  aPausedD: string; // decisions
  aPausedDCall: string;
  aPausedClient: string; // decisions (submit_result)
  aPausedClientCall: string;
  bDone: string;
  bDoneLastSeq: number;
  bPaused: string;
  bPausedCall: string;
}

describe('HTTP API fuzz (fast-check, real Redis)', () => {
  let s: InProcessStack;
  let fx: Fixtures;
  const owner = new Map<string, 'a' | 'b'>();
  let protoBefore: { object: string[]; array: string[]; fn: string[] };
  const startedAt = Date.now();

  const noteCreated = (res: WireResponse, a: AuthSpec) => {
    if (
      (res.status === 202 || res.status === 200) &&
      isObj(res.json) &&
      typeof res.json.id === 'string' &&
      (a.tenant === 'a' || a.tenant === 'b')
    )
      owner.set(res.json.id, a.tenant);
  };

  beforeAll(async () => {
    protoBefore = {
      object: Object.getOwnPropertyNames(Object.prototype),
      array: Object.getOwnPropertyNames(Array.prototype),
      fn: Object.getOwnPropertyNames(Function.prototype),
    };
    s = await InProcessStack.start({ script });
    target = new URL(s.a.baseUrl);
    const email = (mark: string) => ({ input: `${mark} please`, model: VALID_MODEL, tools: ['send_email'] });
    const client = {
      input: `${CLIENT_MARK} please`,
      model: VALID_MODEL,
      clientTools: [{ name: 'pick_file', parameters: { type: 'object', properties: {} } }],
    };
    const paused = async (c: typeof s.a, body: unknown) => {
      const id = await c.startRun(body);
      const snap = await c.waitFor(id, (r) => r.status === 'paused');
      return [id, snap.pending[0]!.callId] as const;
    };
    const done = async (c: typeof s.a) => {
      const id = await c.startRun({ input: 'hello', model: VALID_MODEL });
      await c.waitTerminal(id);
      const ev = await c.events(id);
      return [id, ev.ids[ev.ids.length - 1]!] as const;
    };
    const [aDone, aDoneLastSeq] = await done(s.a);
    const [aPaused, aPausedCall] = await paused(s.a, email(EMAIL_MARK));
    const [aPausedD, aPausedDCall] = await paused(s.a, email(EMAIL_MARK));
    const [aPausedClient, aPausedClientCall] = await paused(s.a, client);
    const [bDone, bDoneLastSeq] = await done(s.b);
    const [bPaused, bPausedCall] = await paused(s.b, email(EMAIL_MARK));
    fx = {
      aDone,
      aDoneLastSeq,
      aPaused,
      aPausedCall,
      aPausedD,
      aPausedDCall,
      aPausedClient,
      aPausedClientCall,
      bDone,
      bDoneLastSeq,
      bPaused,
      bPausedCall,
    };
    for (const id of [aDone, aPaused, aPausedD, aPausedClient]) owner.set(id, 'a');
    for (const id of [bDone, bPaused]) owner.set(id, 'b');
  }, 60_000);

  afterAll(async () => {
    agent.destroy();
    await s?.stop();
  });

  const aIds = () => [fx.aDone, fx.aPaused, fx.aPausedD, fx.aPausedClient];
  const bIds = () => [fx.bDone, fx.bPaused];
  const allCallIds = () => [fx.aPausedCall, fx.aPausedDCall, fx.aPausedClientCall, fx.bPausedCall];

  it(
    'no-auth and catalog endpoints: /healthz, /readyz, /metrics, /v1/openapi.json, /v1/tools, /v1/threads/:id',
    async () => {
      group = 'misc';
      const endpoint = fc.constantFrom('healthz', 'readyz', 'metrics', 'openapi', 'tools', 'threads');
      const method = fc.oneof(
        { weight: 6, arbitrary: fc.constant('GET') },
        {
          weight: 2,
          arbitrary: fc.constantFrom('HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND', 'FOO'),
        },
      );
      const q = fc.option(
        fc.array(fc.tuple(fc.string({ maxLength: 10, unit: 'binary' }), fc.string({ maxLength: 20, unit: 'binary' })), {
          maxLength: 3,
        }),
        { nil: undefined },
      );
      await fc.assert(
        fc.asyncProperty(
          endpoint,
          method,
          q,
          segModeArb,
          authArb,
          fc.option(fc.oneof(weirdIdArb, fc.constant('thread-1')), { nil: undefined }),
          fc.option(anyBody(allCallIds()), { freq: 3, nil: undefined }),
          async (ep, m, qs, mode, a, threadId, body) => {
            const qstr = qs?.length ? `?${qs.map(([k, v]) => `${seg(k, mode)}=${seg(v, mode)}`).join('&')}` : '';
            const path =
              {
                healthz: '/healthz',
                readyz: '/readyz',
                metrics: '/metrics',
                openapi: '/v1/openapi.json',
                tools: '/v1/tools',
                threads: `/v1/threads/${seg(threadId ?? 'thread-1', mode)}`,
              }[ep] + qstr;
            const r: WireRequest = body
              ? withBody(m, path, body, { ct: jsonCt, enc: ENCODINGS[0]!, auth: a })
              : { method: m, path, headers: headersOf(a) };
            await exchange(r, (res) => {
              if (m !== 'GET') return null;
              if (ep === 'healthz' || ep === 'readyz' || ep === 'metrics')
                return res.status === 200 ? null : `expected 200 (no auth), got ${res.status}`;
              if (ep === 'openapi') {
                if (res.status !== 200) return `expected 200 (no auth), got ${res.status}`;
                return isObj(res.json) && typeof res.json.openapi === 'string' && res.json.openapi.startsWith('3.1')
                  ? null
                  : 'not an OpenAPI 3.1 document';
              }
              if (a.tenant === 'none') return expectStatus([401], 'unauthorized')(res);
              if (ep === 'tools' && (a.tenant === 'a' || a.tenant === 'b'))
                return res.status === 200 && isObj(res.json) && Array.isArray(res.json.data)
                  ? null
                  : `expected 200 {data:[...]}, got ${res.status}`;
              return null;
            });
          },
        ),
        runs(250),
      );
    },
    SLOW,
  );

  it(
    'unknown paths and methods',
    async () => {
      group = 'unknown';
      const method = fc.constantFrom(
        'GET',
        'POST',
        'PUT',
        'PATCH',
        'DELETE',
        'HEAD',
        'OPTIONS',
        'TRACE',
        'PROPFIND',
        'FOO',
        'M-SEARCH',
        'PURGE',
        'LINK',
        'QUERY',
        'MKCOL',
      );
      const known = fc.constantFrom(
        '/v1/runs',
        '/v1/runs/run_x',
        '/v1/runs/run_x/events',
        '/v1/runs/run_x/decisions',
        '/v1/runs/run_x/cancel',
        '/v1/runs/run_x/calls/c',
        '/v1/runs/run_x/webhooks',
        '/v1/tools',
        '/v1/threads/t',
        '/v1/openapi.json',
        '/healthz',
        '/readyz',
        '/metrics',
      );
      const path = fc.oneof(
        fc.webPath(),
        known,
        fc
          .tuple(fc.array(weirdIdArb, { minLength: 1, maxLength: 5 }), segModeArb)
          .map(([segs, mode]) => `/${segs.map((x) => seg(x, mode)).join('/')}`),
        fc
          .tuple(known, fc.array(weirdIdArb, { minLength: 1, maxLength: 3 }), segModeArb)
          .map(([k, segs, mode]) => `${k}/${segs.map((x) => seg(x, mode)).join('/')}`),
        fc.constantFrom(
          '/',
          '*',
          '//',
          '/v1',
          '/v1/',
          '/v2/runs',
          '/V1/RUNS',
          '/v1/runs/',
          '/v1//runs',
          '/v1/./runs',
          '/v1/runs/../tools',
          '/v1/runs/%2e%2e/tools',
          '/v1/runs?x',
          '/admin/queues',
          '/admin',
          '/v1/admin',
          '/.env',
          '/v1/openapi.yaml',
          '/metrics/',
          '/healthz/x',
          'http://127.0.0.1/healthz',
          '/%',
          '/%00',
          '/\\..\\..\\etc\\passwd',
          '/v1/tools/../../healthz',
          '/v1/runs/%',
          '/v1/runs/%E0%A4%A/events',
          '/v1/threads/',
          '/v1/runs//calls/',
        ),
        fc.constant(`/${'a'.repeat(10_000)}`),
        fc.constant(`/v1/runs/${'%41'.repeat(6000)}`),
      );
      await fc.assert(
        fc.asyncProperty(
          method,
          path,
          authArb,
          fc.option(anyBody(allCallIds()), { freq: 3, nil: undefined }),
          async (m, p, a, body) => {
            const r: WireRequest = body
              ? withBody(m, p, body, { ct: jsonCt, enc: ENCODINGS[0]!, auth: a })
              : { method: m, path: p, headers: headersOf(a) };
            const res = await exchange(r);
            if (m === 'POST' && p === '/v1/runs') noteCreated(res, a);
          },
        ),
        runs(220),
      );
    },
    SLOW,
  );

  it(
    'POST /v1/runs: content types, charsets, encodings, authorization, idempotency keys',
    async () => {
      group = 'runs-headers';
      const body = fc.oneof({ weight: 3, arbitrary: validRunBody }, { weight: 2, arbitrary: anyBody(allCallIds()) });
      await fc.assert(
        fc.asyncProperty(
          body,
          contentTypeArb,
          encodingArb,
          authArb,
          idemArb,
          fc.boolean(),
          async (b, c, e, a, idem, chunked) => {
            const r = { ...withBody('POST', '/v1/runs', b, { ct: c, enc: e, auth: a, idem }), chunked };
            const raw = b.bytes();
            const res = await exchange(r, (res) => {
              if (a.tenant === 'none') return expectStatus([401], 'unauthorized')(res);
              if (a.tenant === null) return null;
              if (undecodable(raw, { ct: c, enc: e })) return expectStatus([400, 415])(res);
              if (b.validRun && c.ok === true && e.ok === true && idem === undefined) return expectStatus([202])(res);
              return null;
            });
            noteCreated(res, a);
          },
        ),
        runs(320),
      );
    },
    SLOW,
  );

  it(
    'POST /v1/runs: random, malformed, empty, invalid UTF-8 and decision-shaped bodies',
    async () => {
      group = 'runs-bodies';
      await fc.assert(
        fc.asyncProperty(anyBody(allCallIds()), async (b) => {
          const res = await exchange(
            withBody('POST', '/v1/runs', b, { ct: jsonCt, enc: ENCODINGS[0]!, auth: AUTH_A }),
            (res) => b.runExpect && expectStatus(b.runExpect)(res),
          );
          noteCreated(res, AUTH_A);
        }),
        runs(300),
      );
    },
    SLOW,
  );

  describe('POST /v1/runs: a wrong type in a RunRequest field is 400 invalid_request', () => {
    const wrongTypeCase = (path: Array<string | number>, wrong: fc.Arbitrary<unknown>) => async () => {
      group = 'wrong-types';
      await fc.assert(
        fc.asyncProperty(wrong, async (w) => {
          const body = jsonSpec(withValueAt({ input: 'hello', model: VALID_MODEL }, path, w), [400]);
          const res = await exchange(
            withBody('POST', '/v1/runs', body, { ct: jsonCt, enc: ENCODINGS[0]!, auth: AUTH_A }),
            (res) => {
              const bad = expectStatus([400], 'invalid_request')(res);
              if (bad) return bad;
              const details = isObj(res.json) && isObj(res.json.error) ? res.json.error.details : undefined;
              return Array.isArray(details) && details.length > 0
                ? null
                : 'a 400 without the zod issues in error.details';
            },
          );
          noteCreated(res, AUTH_A);
        }),
        runs(10),
      );
    };
    for (const [path, wrong] of FIELDS) it(path.join('.'), wrongTypeCase(path, wrong), SLOW);
    for (const [path, wrong] of SPEC_FIELDS) it(`${path.join('.')} (SPEC field)`, wrongTypeCase(path, wrong), SLOW);
  });

  it(
    'POST /v1/runs: prototype-pollution keys at every depth',
    async () => {
      group = 'proto';
      await fc.assert(
        fc.asyncProperty(
          protoBody,
          fc.constantFrom(jsonCt, CONTENT_TYPES[4]!, CONTENT_TYPES[10]!),
          encodingArb,
          async (b, c, e) => {
            const res = await exchange(withBody('POST', '/v1/runs', b, { ct: c, enc: e, auth: AUTH_A }), (res) =>
              e.ok === true ? expectStatus([202, 400])(res) : null,
            );
            noteCreated(res, AUTH_A);
          },
        ),
        runs(120),
      );
      expect(({} as Record<string, unknown>).polluted_by_fuzz).toBeUndefined();
    },
    SLOW,
  );

  it(
    'POST /v1/runs: deep nesting (up to 100,000 levels) is 400 beyond 64 levels; brackets inside strings are no nesting',
    async () => {
      group = 'deep';
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(deepBody, trickyStringBody),
          fc.constantFrom(ENCODINGS[0]!, ENCODINGS[2]!),
          async (b, e) => {
            const res = await exchange(
              withBody('POST', '/v1/runs', b, { ct: jsonCt, enc: e, auth: AUTH_A }),
              (res) => b.runExpect && expectStatus(b.runExpect)(res),
            );
            noteCreated(res, AUTH_A);
          },
        ),
        runs(90),
      );
    },
    SLOW,
  );

  it(
    'POST /v1/runs: input arrays of thousands of messages',
    async () => {
      group = 'many-messages';
      await fc.assert(
        fc.asyncProperty(manyBody, async (b) => {
          const res = await exchange(
            withBody('POST', '/v1/runs', b, { ct: jsonCt, enc: ENCODINGS[0]!, auth: AUTH_A }),
            (res) => b.runExpect && expectStatus(b.runExpect)(res),
          );
          noteCreated(res, AUTH_A);
        }),
        runs(20),
      );
    },
    SLOW,
  );

  it(
    'POST /v1/runs: the same Idempotency-Key (any characters) returns the same run; another body is 422',
    async () => {
      group = 'idempotency';
      let n = 0;
      const tag = randomBytes(4).toString('hex');
      const suffix = fc.oneof(
        fc.string({ minLength: 1, maxLength: 40, unit: 'binary' }),
        fc.constantFrom('ключ', '🔑', 'clé', '鍵', '%20', '"quoted"'),
        fc.string({ minLength: 1, maxLength: 150 }),
      );
      const reorder = (v: Record<string, unknown>) => Object.fromEntries(Object.entries(v).reverse());
      await fc.assert(
        fc.asyncProperty(
          suffix,
          validRunValue,
          fc.string({ minLength: 1, maxLength: 20 }),
          async (sfx, body, other) => {
            const key = `fuzz-${tag}-${++n}-${sfx}`;
            const post = (v: unknown) =>
              send({
                method: 'POST',
                path: '/v1/runs',
                headers: headersOf(AUTH_A, { 'content-type': 'application/json', 'idempotency-key': key }),
                body: Buffer.from(JSON.stringify(v)),
              });
            const req = {
              method: 'POST',
              path: '/v1/runs',
              headers: headersOf(AUTH_A, { 'content-type': 'application/json', 'idempotency-key': key }),
              body: Buffer.from(JSON.stringify(body)),
            };
            const first = await exchange(req, expectStatus([202]));
            noteCreated(first, AUTH_A);
            const again = await post(reorder(body));
            const againProblems = genericProblems(req, again);
            if (
              againProblems.length ||
              again.status !== 200 ||
              !isObj(again.json) ||
              !isObj(first.json) ||
              again.json.id !== first.json.id
            )
              throw new Error(
                `the same key and body (keys reordered) → ${again.status} ${trunc(again.text, 300)} (first: ${first.text})\n${describeReq(req)}`,
              );
            const changed = { ...body, input: `${typeof body.input === 'string' ? body.input : 'x'}#${other}` };
            const mismatch = await post(changed);
            if (
              genericProblems(req, mismatch).length ||
              mismatch.status !== 422 ||
              errCode(mismatch) !== 'idempotency_mismatch'
            )
              throw new Error(
                `the same key with another body → ${mismatch.status} ${trunc(mismatch.text, 300)}, expected 422 idempotency_mismatch\n${describeReq({ ...req, body: Buffer.from(JSON.stringify(changed)) })}`,
              );
          },
        ),
        runs(40),
      );
    },
    SLOW,
  );

  it(
    'GET /v1/runs?status=&limit=&cursor= never lists another tenant’s runs',
    async () => {
      group = 'list';
      const statusArb = fc.option(
        fc.oneof(
          fc.constantFrom('queued', 'running', 'paused', 'completed', 'failed', 'cancelled'),
          fc.constantFrom('', 'PAUSED', 'done', 'paused,completed'),
          fc.string({ maxLength: 12, unit: 'binary' }),
        ),
        { nil: undefined },
      );
      const limitArb = fc.option(
        fc.oneof(
          fc.integer({ min: 1, max: 200 }).map(String),
          fc.constantFrom(
            '0',
            '201',
            '-1',
            '1.5',
            '1e2',
            'abc',
            '',
            '0x10',
            ' 5',
            '5 ',
            '9'.repeat(30),
            'Infinity',
            'NaN',
          ),
          fc.string({ maxLength: 8, unit: 'binary' }),
        ),
        { nil: undefined },
      );
      const cursorArb = fc.option(
        fc.oneof(
          fc.constant(''),
          fc.tuple(fc.nat(), missingIdArb).map(([t, id]) => `${t}.${id}`),
          fc.constantFrom('9999999999999999.x', '.', '1.', 'abc', '99999999999999999999.run_x'),
          fc.string({ maxLength: 30, unit: 'binary' }),
        ),
        { nil: undefined },
      );
      const VALID_STATUS = ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'];
      await fc.assert(
        fc.asyncProperty(
          statusArb,
          limitArb,
          cursorArb,
          fc.boolean(),
          segModeArb,
          authArb,
          fc.boolean(),
          async (st, lim, cur, dup, mode, a, crossCursor) => {
            const cursor = crossCursor && cur === undefined ? `${Date.now()}.${fx.bPaused}` : cur;
            const pairs: Array<[string, string | undefined]> = [
              ['status', st],
              ['limit', lim],
              ['cursor', cursor],
            ];
            if (dup) pairs.push(['status', 'paused']);
            const r: WireRequest = { method: 'GET', path: `/v1/runs${query(pairs, mode)}`, headers: headersOf(a) };
            const tenant = a.tenant;
            const res = await exchange(r, (res) => {
              if (tenant === 'none') return expectStatus([401], 'unauthorized')(res);
              if (res.status === 200 && (tenant === 'a' || tenant === 'b')) {
                if (!isObj(res.json) || !Array.isArray(res.json.data)) return 'a 200 listing without data[]';
                const foreign = res.json.data
                  .map((d) => (isObj(d) ? d.id : undefined))
                  .filter((id) => typeof id === 'string' && owner.has(id) && owner.get(id) !== tenant);
                if (foreign.length) return `tenant ${tenant} sees another tenant's runs: ${foreign.join(', ')}`;
                if (!(res.json.nextCursor === null || typeof res.json.nextCursor === 'string'))
                  return 'nextCursor is neither a string nor null';
              }
              const simple =
                (tenant === 'a' || tenant === 'b') &&
                !dup &&
                (st === undefined || VALID_STATUS.includes(st)) &&
                (lim === undefined || /^(?:[1-9]\d?|1\d\d|200)$/.test(lim)) &&
                !cursor;
              if (simple) {
                if (res.status !== 200) return `expected 200, got ${res.status}`;
                const data = isObj(res.json) && Array.isArray(res.json.data) ? res.json.data : [];
                if (data.length > Number(lim ?? 50)) return `${data.length} runs for limit ${lim ?? 50}`;
              }
              return null;
            });
            // follow one page
            if (
              res.status === 200 &&
              isObj(res.json) &&
              typeof res.json.nextCursor === 'string' &&
              (tenant === 'a' || tenant === 'b')
            ) {
              const seen = new Set((res.json.data as Array<{ id: string }>).map((d) => d.id));
              await exchange(
                {
                  method: 'GET',
                  path: `/v1/runs${query(
                    [
                      ['status', st],
                      ['limit', lim],
                      ['cursor', res.json.nextCursor],
                    ],
                    'encoded',
                  )}`,
                  headers: headersOf(a),
                },
                (next) => {
                  if (next.status !== 200 || !isObj(next.json) || !Array.isArray(next.json.data))
                    return `the next page → ${next.status}`;
                  const again = next.json.data
                    .map((d) => (isObj(d) ? d.id : undefined))
                    .filter((id) => typeof id === 'string' && seen.has(id));
                  return again.length ? `the next page repeats ${again.join(', ')}` : null;
                },
              );
            }
          },
        ),
        runs(150),
      );
    },
    SLOW,
  );

  it(
    'GET /v1/runs/:id with ?include=messages|history|junk',
    async () => {
      group = 'get-run';
      const include = fc.option(
        fc.oneof(
          fc.constantFrom(
            'messages',
            'history',
            'junk',
            'messages,history',
            '',
            'MESSAGES',
            'messages,junk,history',
            'messages&include=history',
          ),
          fc.string({ maxLength: 20, unit: 'binary' }),
        ),
        { nil: undefined },
      );
      await fc.assert(
        fc.asyncProperty(idArb(aIds(), bIds()), include, authArb, async (id, inc, a) => {
          const r: WireRequest = {
            method: 'GET',
            path: `/v1/runs/${seg(id.id, id.mode)}${inc === undefined ? '' : `?include=${inc.includes('&') ? inc : seg(inc, id.mode)}`}`,
            headers: headersOf(a),
          };
          await exchange(r, (res) => {
            const rel = relation(id, a);
            if (rel === 'unauthorized') return expectStatus([401], 'unauthorized')(res);
            if (rel === 'hidden') return expectStatus([404], 'not_found')(res);
            if (rel === 'own') {
              if (res.status !== 200 || !isObj(res.json) || res.json.id !== id.id)
                return `expected 200 with the run, got ${res.status}`;
              if (inc === 'messages' && !Array.isArray(res.json.messages)) return 'include=messages without messages[]';
              if (inc === 'history' && !Array.isArray(res.json.history)) return 'include=history without history[]';
            }
            return null;
          });
        }),
        runs(150),
      );
    },
    SLOW,
  );

  it(
    'GET /v1/runs/:id/events with Last-Event-ID / ?after= garbage (SSE read briefly, then aborted)',
    async () => {
      group = 'events';
      const fuzzed = fc.tuple(idArb(aIds(), bIds()), lastEventIdArb, lastEventIdArb, authArb);
      // half the cases: tenant a's own runs with well-formed replay points, so that many streams open (and get cut)
      const point = fc.option(fc.nat({ max: 12 }).map(String), { nil: undefined });
      const streaming = fc.tuple(
        fc.constantFrom(fx.aDone, fx.aPaused).chain((id) => segModeArb.map((mode) => idSpec(id, 'a', mode))),
        point,
        point,
        fc.constant(AUTH_A),
      );
      const eventsCase = fc.tuple(
        fc.oneof(fuzzed, streaming),
        fc.constantFrom(undefined, 'text/event-stream', 'application/json', '*/*'),
      );
      // the paused run's last event (it stays paused, its seq unchanged, through this property)
      const pausedLastSeq = Number(await s.redis.hget(new DeploymentKeys(s.keyPrefix).run(fx.aPaused).state, 'seq'));
      expect(pausedLastSeq).toBeGreaterThan(0);
      await fc.assert(
        fc.asyncProperty(eventsCase, async ([[id, lastId, after, a], accept]) => {
          const r: WireRequest = {
            method: 'GET',
            path: `/v1/runs/${seg(id.id, id.mode)}/events${after === undefined ? '' : `?after=${seg(after, id.mode)}`}`,
            headers: headersOf(a, { 'last-event-id': lastId, accept }),
          };
          await exchange(r, (res) => {
            // a raw `?` in the id ends the path there: the request names the run list, not a stream
            const routesToList = id.mode !== 'encoded' && id.id.includes('?');
            if (res.status === 200 && !res.sse && !routesToList) return 'a 200 that is not text/event-stream';
            const rel = relation(id, a);
            if (rel === 'unauthorized') return expectStatus([401], 'unauthorized')(res);
            if (rel === 'hidden') return expectStatus([404], 'not_found')(res);
            if (rel === 'own') {
              const point = lastId ?? after; // the header wins
              const seq = point === undefined ? 0 : /^\d{1,15}$/.test(point) ? Number(point) : null;
              if (seq === null) return null;
              const done = id.id === fx.aDone || id.id === fx.bDone;
              const lastSeq = id.id === fx.aDone ? fx.aDoneLastSeq : fx.bDoneLastSeq;
              if (done && seq >= lastSeq) return expectStatus([204])(res);
              if (done) return expectStatus([200])(res);
              // live: past its last event no event has that id (400), else the stream replays, then follows
              if (id.id === fx.aPaused)
                return seq > pausedLastSeq ? expectStatus([400], 'invalid_request')(res) : expectStatus([200])(res);
            }
            return null;
          });
        }),
        runs(160),
      );
    },
    SLOW,
  );

  it(
    'GET /v1/runs/:id/calls/:callId',
    async () => {
      group = 'calls';
      const callArb = fc.oneof(fc.constantFrom(...allCallIds()), weirdIdArb, fc.constant('call_doesnotexist'));
      await fc.assert(
        fc.asyncProperty(idArb([fx.aPaused, fx.aDone], bIds()), callArb, authArb, async (id, callId, a) => {
          const r: WireRequest = {
            method: 'GET',
            path: `/v1/runs/${seg(id.id, id.mode)}/calls/${seg(callId, id.mode)}`,
            headers: headersOf(a),
          };
          const realCall = new Map([
            [fx.aPaused, fx.aPausedCall],
            [fx.bPaused, fx.bPausedCall],
          ]).get(id.id);
          await exchange(r, (res) => {
            const rel = relation(id, a);
            if (rel === 'unauthorized') return expectStatus([401], 'unauthorized')(res);
            if (rel === 'hidden') return expectStatus([404], 'not_found')(res);
            if (rel === 'own' && callId === realCall)
              return res.status === 200 &&
                isObj(res.json) &&
                res.json.callId === callId &&
                res.json.name === 'send_email'
                ? null
                : `expected the call's record, got ${res.status}`;
            if (rel === 'own' && allCallIds().includes(callId)) return expectStatus([404], 'not_found')(res); // another run's call
            return null;
          });
        }),
        runs(100),
      );
    },
    SLOW,
  );

  it(
    'POST /v1/runs/:id/decisions with any body',
    async () => {
      group = 'decisions';
      const body = fc.oneof(
        { weight: 3, arbitrary: decisionBody([fx.aPausedDCall, fx.aPausedClientCall, fx.bPausedCall]) },
        { weight: 2, arbitrary: anyBody([fx.aPausedDCall, fx.aPausedClientCall]) },
      );
      await fc.assert(
        fc.asyncProperty(
          idArb([fx.aPausedD, fx.aPausedClient, fx.aDone], bIds()),
          body,
          contentTypeArb,
          encodingArb,
          authNoBArb,
          async (id, b, c, e, a) => {
            const r = withBody('POST', `/v1/runs/${seg(id.id, id.mode)}/decisions`, b, { ct: c, enc: e, auth: a });
            const raw = b.bytes();
            await exchange(r, (res) => {
              const rel = relation(id, a);
              if (rel === 'unauthorized') return expectStatus([401], 'unauthorized')(res);
              if (rel === 'hidden' && decodes(raw, { ct: c, enc: e })) return expectStatus([404], 'not_found')(res);
              if (rel === 'own' && id.id === fx.aDone && decodes(raw, { ct: c, enc: e }) && raw !== undefined)
                return expectStatus([400, 409])(res);
              return expectStatus([202, 400, 401, 404, 409, 413, 415])(res);
            });
          },
        ),
        runs(160),
      );
    },
    SLOW,
  );

  it(
    'POST /v1/runs/:id/cancel with any body',
    async () => {
      group = 'cancel';
      await fc.assert(
        fc.asyncProperty(
          idArb([fx.aDone, fx.aPaused], bIds()),
          fc.option(anyBody(allCallIds()), { freq: 2, nil: undefined }),
          contentTypeArb,
          encodingArb,
          authNoBArb,
          async (id, b, c, e, a) => {
            const path = `/v1/runs/${seg(id.id, id.mode)}/cancel`;
            const r = b
              ? withBody('POST', path, b, { ct: c, enc: e, auth: a })
              : { method: 'POST', path, headers: headersOf(a) };
            const plain = !b || decodes(b.bytes(), { ct: c, enc: e });
            await exchange(r, (res) => {
              const rel = relation(id, a);
              if (rel === 'unauthorized') return expectStatus([401], 'unauthorized')(res);
              if (rel === 'hidden' && plain) return expectStatus([404], 'not_found')(res);
              if (rel === 'own' && id.id === fx.aDone && plain) return expectStatus([409], 'conflict')(res);
              return expectStatus([202, 400, 401, 404, 409, 413, 415])(res);
            });
          },
        ),
        runs(100),
      );
    },
    SLOW,
  );

  /** One request of tenant a to tenant b's run, on any run endpoint, any body or header. */
  interface CrossCase {
    endpoint: 'run' | 'events' | 'decisions' | 'cancel' | 'calls' | 'webhooks';
    run: 'bDone' | 'bPaused';
    include: string | undefined;
    lastId: string | undefined;
    after: string | undefined;
    body: BodySpec | undefined;
    ct: CtSpec;
    enc: EncSpec;
    callReal: boolean;
    mode: SegMode;
  }
  const crossArb = (withHuge: boolean) =>
    fc.record<CrossCase>({
      endpoint: fc.constantFrom('run', 'events', 'decisions', 'cancel', 'calls', 'webhooks'),
      run: fc.constantFrom('bDone', 'bPaused'),
      include: fc.option(fc.constantFrom('messages', 'history', 'junk', 'messages,history'), { nil: undefined }),
      lastId: lastEventIdArb,
      after: lastEventIdArb,
      body: fc.option(
        withHuge
          ? fc.oneof({ weight: 12, arbitrary: anyBody([fx.bPausedCall]) }, { weight: 1, arbitrary: hugeBody })
          : anyBody([fx.bPausedCall]),
        { freq: 6, nil: undefined },
      ),
      ct: contentTypeArb,
      enc: encodingArb,
      callReal: fc.boolean(),
      mode: fc.constantFrom<SegMode>('encoded', 'raw'),
    });
  const crossRequest = (c: CrossCase, runId: string): WireRequest => {
    const id = seg(runId, c.mode);
    const callId = c.callReal ? fx.bPausedCall : 'call_doesnotexist';
    switch (c.endpoint) {
      case 'run':
        return {
          method: 'GET',
          path: `/v1/runs/${id}${c.include ? `?include=${seg(c.include, c.mode)}` : ''}`,
          headers: headersOf(AUTH_A),
        };
      case 'events':
        return {
          method: 'GET',
          path: `/v1/runs/${id}/events${c.after === undefined ? '' : `?after=${seg(c.after, c.mode)}`}`,
          headers: headersOf(AUTH_A, { 'last-event-id': c.lastId, accept: 'text/event-stream' }),
        };
      case 'calls':
        return { method: 'GET', path: `/v1/runs/${id}/calls/${callId}`, headers: headersOf(AUTH_A) };
      case 'webhooks':
        return { method: 'GET', path: `/v1/runs/${id}/webhooks`, headers: headersOf(AUTH_A) };
      case 'decisions':
      case 'cancel': {
        const path = `/v1/runs/${id}/${c.endpoint}`;
        return c.body
          ? withBody('POST', path, c.body, { ct: c.ct, enc: c.enc, auth: AUTH_A })
          : { method: 'POST', path, headers: headersOf(AUTH_A) };
      }
    }
  };

  it(
    'tenant a on tenant b’s runs: exactly the answer for a run that does not exist, on every run endpoint, whatever the body',
    async () => {
      group = 'cross-tenant-same';
      await fc.assert(
        fc.asyncProperty(crossArb(true), missingIdArb, async (c, missing) => {
          const theirsId = fx[c.run];
          const theirsReq = crossRequest(c, theirsId);
          const noneReq = crossRequest(c, missing);
          const theirs = await exchange(theirsReq);
          const none = await exchange(noneReq);
          const norm = (text: string, id: string) => text.split(id).join('<RUN>');
          if (
            theirs.status !== none.status ||
            norm(theirs.text, theirsId) !== norm(none.text, missing) ||
            theirs.sse !== none.sse
          )
            throw new Error(
              `another tenant's run answers differently from a missing one:\n  theirs → ${theirs.status} ${trunc(theirs.text, 300)}\n  missing → ${none.status} ${trunc(none.text, 300)}\n${describeReq(theirsReq)}`,
            );
        }),
        runs(150),
      );
    },
    SLOW,
  );

  it('a request target with a fragment (`#`) is 400 invalid_request, never the route before the `#`', async () => {
    group = 'fragment';
    const paths = [`/v1/runs/#/events`, `/v1/runs/${fx.aDone}#x`, `/v1/runs?limit=1#frag`, `/v1/runs/#`];
    for (const path of paths)
      await exchange({ method: 'GET', path, headers: headersOf(AUTH_A, {}) }, expectStatus([400], 'invalid_request'));
  });

  it(
    'tenant a on tenant b’s runs: 404 not_found before any other check, whatever the body',
    async () => {
      group = 'cross-tenant-404';
      await fc.assert(
        fc.asyncProperty(crossArb(true), async (c) => {
          await exchange(crossRequest(c, fx[c.run]), expectStatus([404], 'not_found'));
        }),
        runs(120),
      );
    },
    SLOW,
  );

  it(
    'huge bodies: > 1 MiB is 413, up to 1 MiB is accepted',
    async () => {
      group = 'huge';
      await fc.assert(
        fc.asyncProperty(
          hugeBody,
          fc.constantFrom<'runs' | 'decisions'>('runs', 'runs', 'decisions'),
          fc.boolean(),
          async (b, where, chunked) => {
            if (where === 'runs') {
              const res = await exchange(
                { ...withBody('POST', '/v1/runs', b, { ct: jsonCt, enc: ENCODINGS[0]!, auth: AUTH_A }), chunked },
                (res) => b.runExpect && expectStatus(b.runExpect)(res),
              );
              noteCreated(res, AUTH_A);
            } else {
              const over = b.runExpect?.includes(413) && b.label.startsWith('over');
              await exchange(
                {
                  ...withBody('POST', `/v1/runs/${fx.aPausedD}/decisions`, b, {
                    ct: jsonCt,
                    enc: ENCODINGS[0]!,
                    auth: AUTH_A,
                  }),
                  chunked,
                },
                (res) =>
                  over ? expectStatus([413], 'payload_too_large')(res) : expectStatus([202, 400, 409, 413])(res),
              );
            }
          },
        ),
        runs(16),
      );
    },
    SLOW,
  );

  it(`after the fuzzing: >= 2000 requests sent, the service is healthy, nothing leaked or polluted, a normal run completes`, async () => {
    group = 'after';
    const health = await send({ method: 'GET', path: '/healthz', headers: {} });
    const ready = await send({ method: 'GET', path: '/readyz', headers: {} });
    expect(health.status).toBe(200);
    expect(ready.status).toBe(200);
    // nothing of tenant a reached tenant b's runs
    const bPaused = await s.b.getRun(fx.bPaused);
    expect(bPaused.json.status).toBe('paused');
    expect(bPaused.json.pending.map((p) => p.callId)).toEqual([fx.bPausedCall]);
    expect((await s.b.events(fx.bDone)).ids.at(-1)).toBe(fx.bDoneLastSeq);
    // no prototype was polluted by any body
    expect(Object.getOwnPropertyNames(Object.prototype)).toEqual(protoBefore.object);
    expect(Object.getOwnPropertyNames(Array.prototype)).toEqual(protoBefore.array);
    expect(Object.getOwnPropertyNames(Function.prototype)).toEqual(protoBefore.fn);
    expect(({} as Record<string, unknown>).polluted_by_fuzz).toBeUndefined();
    // and the engine still works
    const id = await s.a.startRun({
      input: 'hello after the fuzz',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
    });
    const done = await s.a.waitTerminal(id);
    expect(done.status).toBe('completed');
    expect(done.output).toBe('ok');
    console.log(
      `api-fuzz: ${sent} requests (${sseStreams} SSE streams read and aborted) in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; per group ${JSON.stringify(Object.fromEntries(groupCounts))}; statuses ${JSON.stringify(Object.fromEntries([...statusCounts].sort((x, y) => x[0] - y[0])))}`,
    );
    expect(sent).toBeGreaterThanOrEqual(2000);
  }, 60_000);
});
