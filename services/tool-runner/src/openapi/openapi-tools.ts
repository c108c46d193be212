import { isPrivateAddress } from '@agentloop/runtime';
import { catalogName } from '../catalog-name.js';
import { guardedRequest, type GuardedResponse } from '../guarded-request.js';
import { ToolFailure, type ToolContext, type ToolDefinition } from '../tool-definition.js';
import { buildRequest } from './build-request.js';
import { resolveHeaders, type OpenApiToolsConfig } from './config.js';
import { loadOperations, type OperationInfo } from './document.js';
import { redactor, type Redactor } from './redact.js';
import { descriptionOf, sideEffectOf, toolSchema, type ArgumentPlan } from './tool-schema.js';

type Log = { info: (o: object, m: string) => void; error: (o: object, m: string) => void };

/** An operation's schema goes into every model request that offers it: one larger than this stops the start. */
const MAX_SCHEMA_CHARS = 65_536;
/** What a response may bring in before it is cut (the per-result cap applies after). */
const MAX_RESPONSE_BYTES = 1_000_000;
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i;

export interface OpenApiToolsOptions {
  logger: Log;
  environment?: Record<string, string | undefined>;
  /** Names already taken (the registry's): an operation whose name collides gets a hash suffix. */
  taken?: Iterable<string>;
}

/**
 * The OpenAPI tools (SPEC §6) a tool-runner serves: each listed operation of the entries of its pools as a tool that
 * makes the operation's request under `http_get`'s address rules. An entry naming an unset variable is not started
 * (logged); a document that cannot be loaded, or lacks a listed operation, stops the start.
 */
export async function startOpenApiTools(
  entries: OpenApiToolsConfig[],
  pools: (pool: string) => boolean,
  o: OpenApiToolsOptions,
): Promise<ToolDefinition[]> {
  const taken = new Set(o.taken ?? []);
  const defs: ToolDefinition[] = [];
  for (const entry of entries.filter((e) => pools(e.pool))) {
    const { headers, missing, secrets } = resolveHeaders(entry, o.environment ?? process.env);
    if (missing.length) {
      o.logger.error(
        { openapiTools: entry.name, missing },
        'OpenAPI tools not started: their headers name environment variables that are not set',
      );
      continue;
    }
    const ops = await loadOperations(entry);
    for (const op of ops) {
      const name = catalogName(entry.name, op.operationId, taken);
      taken.add(name);
      defs.push(operationTool(entry, op, name, headers, secrets));
    }
    o.logger.info(
      { openapiTools: entry.name, tools: defs.slice(-ops.length).map((d) => d.name) },
      'OpenAPI tools ready',
    );
  }
  return defs;
}

function operationTool(
  entry: OpenApiToolsConfig,
  op: OperationInfo,
  name: string,
  headers: Record<string, string>,
  secrets: string[],
): ToolDefinition {
  const redact = redactor(secrets);
  const { parameters, plan } = toolSchema(op, headers);
  if (JSON.stringify(parameters).length > MAX_SCHEMA_CHARS)
    throw new Error(
      `AGENTLOOP_OPENAPI_TOOLS [${entry.name}]: the schema of operation '${op.operationId}' is over ${MAX_SCHEMA_CHARS} characters`,
    );
  return {
    name,
    description: descriptionOf(op),
    parameters,
    ...sideEffectOf(op.method, entry.sideEffects[op.operationId]),
    pool: entry.pool,
    timeoutMs: entry.timeoutMs,
    execute: (args, ctx) => callOperation(entry, op, plan, headers, redact, args, ctx),
  };
}

async function callOperation(
  entry: OpenApiToolsConfig,
  op: OperationInfo,
  plan: ArgumentPlan,
  configured: Record<string, string>,
  redact: Redactor,
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<unknown> {
  const req = buildRequest(entry.baseUrl, op.path, plan, args);
  const base = new URL(entry.baseUrl);
  const safeMethod = op.method === 'GET' || op.method === 'HEAD';
  const headers = {
    'user-agent': 'agentloop-openapi/1',
    accept: 'application/json, */*;q=0.8',
    ...req.headers,
    // a call run again after a crash carries the same key: a server that honours it does the effect once
    ...(safeMethod ? {} : { 'idempotency-key': ctx.idempotencyKey }),
  };
  const res = await guardedRequest(req.url, ctx.signal, {
    method: op.method,
    // the operator's headers (credentials) go to the base URL's origin only, never to where a redirect leads
    headers: (url) => (url.origin === base.origin ? { ...headers, ...configured } : headers),
    ...(req.body !== undefined ? { body: req.body } : {}),
    // read past the cut by the longest escaped secret: one that starts before the cut is redacted whole
    maxBytes: MAX_RESPONSE_BYTES + redact.margin,
    followRedirects: safeMethod,
    // allowPrivate: the entry's own baseUrl origin (scheme, host, port) on a private or loopback address (never
    // link-local or metadata): a redirect to another port of the same host is another service
    allowAddress: (address, url) => entry.allowPrivate && url.origin === base.origin && isPrivateAddress(address),
  });
  return resultOf(res, redact);
}

/** 2xx: `{status, body}` (JSON parsed, else text); anything else a tool_error naming the status, retryable for 5xx. */
function resultOf(res: GuardedResponse, redact: Redactor): unknown {
  const truncated = res.truncated || Buffer.byteLength(res.body) > MAX_RESPONSE_BYTES;
  // secrets are redacted before the cut, and a parsed body after parsing (the text may hold them JSON-escaped)
  const text = redact.cut(res.body, MAX_RESPONSE_BYTES);
  let body: unknown = text;
  if (JSON_TYPE.test(res.contentType) && !truncated && res.body.trim() !== '')
    try {
      body = redact.value(JSON.parse(res.body));
    } catch {
      // a server that says JSON and sends something else: its text is the answer
    }
  if (res.status >= 200 && res.status < 300)
    return { status: res.status, body, ...(truncated ? { truncated: true } : {}) };
  const excerpt = text.length > 1000 ? `${redact.cut(res.body, 1000)}…` : text;
  throw new ToolFailure(
    'tool_error',
    `HTTP ${res.status}${excerpt ? `: ${excerpt}` : ''}`,
    res.status >= 500 || res.status === 429 || res.status === 408,
  );
}
