import type http from 'node:http';
import { randomBytes } from 'node:crypto';
import { WireError, estimateTokens } from './openai-wire.js';
import type { ResponsesLedger } from './responses-ledger.js';
import { responsesEvents, responsesJson, sseFrame, type RenderContext } from './responses-render.js';
import { RESPONSES_ERRORS, RESPONSES_REASONING_MODEL, parseResponsesRequest } from './responses-wire.js';
import type { JournalEntry, MockRequest, ReplySpec } from './types.js';
import { cutStream } from './cut-stream.js';

/** What the Responses route needs of the server it runs in. */
export interface ResponsesHost {
  journal: JournalEntry[];
  ledger: ResponsesLedger;
  contextWindows?: Record<string, number>;
  script(req: MockRequest): Promise<ReplySpec>;
  /** A request the mock found against the stateless contract (tests fail on any). */
  violations: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function sendError(
  host: ResponsesHost,
  res: http.ServerResponse,
  err: WireError,
  req: MockRequest,
  headers: Record<string, string> = {},
  injected = false,
  body?: unknown,
): void {
  host.journal.push({ req, status: err.status, error: err.message, injected });
  res.writeHead(err.status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body ?? err.body()));
}

function renderContext(
  entry: MockRequest,
  ledger: ResponsesLedger,
  promptTokens: number,
  callIds: string[],
): RenderContext {
  const include = Array.isArray(entry.body.include) ? entry.body.include : [];
  return {
    model: entry.model,
    reasons: RESPONSES_REASONING_MODEL.test(entry.model),
    encrypted: include.includes('reasoning.encrypted_content'),
    promptTokens,
    callIds,
    ledger,
  };
}

/**
 * `POST /v1/responses`: validated like the real API (stateless use), answered by the script as a Responses SSE
 * stream or JSON body, or a recorded body replayed verbatim.
 */
export async function serveResponses(host: ResponsesHost, entry: MockRequest, res: http.ServerResponse): Promise<void> {
  const body = entry.body;
  if (body.previous_response_id !== undefined && body.previous_response_id !== null)
    host.violations.push(`request ${entry.seq} sent previous_response_id ${String(body.previous_response_id)}`);
  try {
    Object.assign(entry, parseResponsesRequest(body, host.ledger));
  } catch (e) {
    if (e instanceof WireError) return sendError(host, res, e, entry);
    throw e;
  }
  const tokens = estimateTokens(entry);
  const limit = host.contextWindows?.[entry.model];
  const ctx = renderContext(entry, host.ledger, tokens, []);
  if (limit && tokens > limit) {
    if (!entry.stream)
      return sendError(
        host,
        res,
        new WireError(400, RESPONSES_ERRORS.contextLength, 'input', 'context_length_exceeded'),
        entry,
      );
    // streamed, the real API answers 200 and reports it as an `error` event (journaled as the rejection it is)
    host.journal.push({ req: entry, status: 400, error: RESPONSES_ERRORS.contextLength, injected: false });
    const events = responsesEvents(
      { failure: { code: 'context_length_exceeded', message: RESPONSES_ERRORS.contextLength, param: 'input' } },
      ctx,
    ).slice(0, 3);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(events.map((e) => sseFrame(e.event)).join(''));
    return;
  }
  const spec = await host.script(entry);
  if (spec.error) {
    const e = spec.error;
    const err = new WireError(
      e.status,
      e.message ?? `injected ${e.status}`,
      null,
      e.code ?? null,
      e.type ?? (e.status >= 500 ? 'server_error' : 'invalid_request_error'),
    );
    return sendError(host, res, err, entry, e.headers, true, e.body);
  }
  host.journal.push({ req: entry, status: 200, injected: false });
  if (spec.rawSse !== undefined || spec.rawJson !== undefined) {
    res.writeHead(200, { 'content-type': spec.rawSse !== undefined ? 'text/event-stream' : 'application/json' });
    res.end(spec.rawSse ?? JSON.stringify(spec.rawJson));
    return;
  }
  ctx.callIds = (spec.toolCalls ?? []).map((c) => c.id ?? `call_${randomBytes(18).toString('base64url').slice(0, 24)}`);
  if (!entry.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(responsesJson(spec, ctx)));
    return;
  }
  const events = responsesEvents(spec, ctx);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  let sent = 0;
  for (const { event, content } of events) {
    if (content && spec.delayMs) await sleep(spec.delayMs);
    if (content && spec.cutAfterFrames !== undefined && sent >= spec.cutAfterFrames) {
      await cutStream(res);
      return;
    }
    if (res.destroyed) return;
    res.write(sseFrame(event));
    if (content) sent++;
  }
  res.end();
}
