import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OPENAI_ERRORS, WireError, estimateTokens, parseOpenAIRequest } from './openai-wire.js';
import { ResponsesLedger } from './responses-ledger.js';
import { serveResponses } from './responses-route.js';
import { serveGemini } from './gemini-route.js';
import { chatUsage, completeChat, rid, streamChat } from './chat-render.js';
import { applyStop } from './stop-sequences.js';
import type { JournalEntry, MockRequest, Script } from './types.js';

export interface MockLlmOptions {
  port?: number;
  /** Interface to listen on [127.0.0.1]; 0.0.0.0 in a container. */
  host?: string;
  /** Context windows by model name; requests over them get the provider's real context_length_exceeded 400. */
  contextWindows?: Record<string, number>;
  script?: Script;
  /** Serve OpenAI's Responses API at /v1/responses [true]; false plays a Chat-only compatible server (404 there). */
  responsesApi?: boolean;
}

/**
 * A real HTTP server speaking the OpenAI Chat Completions wire format (SSE and JSON), scriptable per request,
 * strict like the real API. Routes: /v1/chat/completions (openai), /deepseek[/v1]/chat/completions,
 * /compat[/v1]/chat/completions. Other wire formats plug in as further routes next to these: Gemini
 * (/v1beta/models/…), OpenAI's Responses API (/v1/responses, stateless use, see responses-route.ts).
 */
export class MockLlmServer {
  readonly journal: JournalEntry[] = [];
  /** Reasoning items and call ids the Responses route issued (what must come back, byte for byte). */
  readonly ledger = new ResponsesLedger();
  /** Requests against the stateless Responses contract (e.g. a previous_response_id): tests expect none. */
  readonly violations: string[] = [];
  private server: http.Server | null = null;
  private script: Script;
  private seq = 0;
  url = '';

  constructor(private readonly opts: MockLlmOptions = {}) {
    this.script = opts.script ?? (() => ({ text: 'OK' }));
    this.responsesApi = opts.responsesApi !== false;
  }

  setScript(script: Script): void {
    this.script = script;
  }

  /** Serve /v1/responses or answer it 404 like a Chat-only endpoint, from now on (an endpoint upgraded, or broken). */
  setResponsesApi(on: boolean): void {
    this.responsesApi = on;
  }

  private responsesApi: boolean;

  /** Requests that reached the script (validated), in arrival order. */
  get requests(): MockRequest[] {
    return this.journal.filter((e) => e.status === 200 || e.injected).map((e) => e.req);
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((err) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err?.message ?? err), type: 'server_error' } }));
      });
    });
    // idle connections live as long as at the providers' front ends (a minute and more): with a 1 s hint, undici
    // (global fetch, which the Gemini SDK runs on) reconnected for every call — its keep-alive threshold exceeds
    // the hint — which no real endpoint makes it do. close() closes them all.
    this.server.keepAliveTimeout = 65_000;
    const host = this.opts.host ?? '127.0.0.1';
    await new Promise<void>((resolve) => this.server!.listen(this.opts.port ?? 0, host, resolve));
    this.url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server!.close(() => r()));
    this.server = null;
  }

  /** Requests being answered right now, and the most at once since start (for concurrency limits). */
  inFlight = 0;
  maxInFlight = 0;
  /** Responses whose connection closed before they ended: the client hung up (an aborted stream), or a scripted cut. */
  closedEarly = 0;

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const receivedAt = process.hrtime.bigint();
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    res.once('close', () => {
      this.inFlight--;
      if (!res.writableEnded) this.closedEarly++;
    });
    const url = new URL(req.url ?? '/', 'http://x');
    const gemini = /^\/v1beta\/models\/([^/:]+):(streamGenerateContent|generateContent)$/.exec(url.pathname);
    if (req.method === 'POST' && gemini)
      return serveGemini(
        { journal: this.journal, script: (r) => this.script(r), nextSeq: () => ++this.seq },
        req,
        res,
        decodeURIComponent(gemini[1]!),
        gemini[2] === 'streamGenerateContent',
        receivedAt,
      );
    const responses = req.method === 'POST' && url.pathname === '/v1/responses' && this.responsesApi;
    const m = /^\/(?:(deepseek|compat)(?:\/v1)?|v1)\/chat\/completions$/.exec(url.pathname);
    if (!responses && (req.method !== 'POST' || !m)) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: {
            message: `Unknown request URL: ${req.method} ${url.pathname}`,
            type: 'invalid_request_error',
            code: 'unknown_url',
          },
        }),
      );
      return;
    }
    const provider = (m?.[1] ?? 'openai') as MockRequest['provider'];
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return this.sendError(res, new WireError(400, 'We could not parse the JSON body of your request.'), null);
    }
    const entryReq: MockRequest = {
      seq: ++this.seq,
      provider,
      wire: responses ? 'responses' : 'chat',
      model: String(body.model ?? ''),
      stream: body.stream === true,
      messages: [],
      tools: [],
      body,
      headers: req.headers,
      receivedAt,
    };
    if (!String(req.headers.authorization ?? '').startsWith('Bearer '))
      return this.sendError(
        res,
        new WireError(401, "You didn't provide an API key.", null, null, 'invalid_request_error'),
        entryReq,
      );
    if (responses)
      return serveResponses(
        {
          journal: this.journal,
          ledger: this.ledger,
          violations: this.violations,
          contextWindows: this.opts.contextWindows,
          script: async (r) => this.script(r),
        },
        entryReq,
        res,
      );
    try {
      Object.assign(entryReq, parseOpenAIRequest(body, provider));
    } catch (e) {
      if (e instanceof WireError) return this.sendError(res, e, entryReq);
      throw e;
    }
    const limit = this.opts.contextWindows?.[entryReq.model];
    const tokens = estimateTokens(entryReq);
    if (limit && tokens > limit)
      return this.sendError(
        res,
        new WireError(400, OPENAI_ERRORS.contextLength(limit, tokens), 'messages', 'context_length_exceeded'),
        entryReq,
      );
    const spec = applyStop(await this.script(entryReq), body.stop);
    if (spec.error) {
      const e = spec.error;
      const err = new WireError(
        e.status,
        e.message ?? `injected ${e.status}`,
        null,
        e.code ?? null,
        e.type ?? (e.status >= 500 ? 'server_error' : 'invalid_request_error'),
      );
      return this.sendError(res, err, entryReq, e.headers, true);
    }
    this.journal.push({ req: entryReq, status: 200, injected: false });
    if (spec.rawSse !== undefined) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(spec.rawSse);
      return;
    }
    if (spec.rawJson !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(spec.rawJson));
      return;
    }
    const ids = (spec.toolCalls ?? []).map((c) => (c.id === null ? '' : (c.id ?? `call_${rid(24)}`)));
    const usage = chatUsage(spec, tokens);
    if (entryReq.stream) await streamChat(res, entryReq, spec, ids, usage);
    else completeChat(res, entryReq, spec, ids, usage);
  }

  private sendError(
    res: http.ServerResponse,
    err: WireError,
    req: MockRequest | null,
    headers: Record<string, string> = {},
    injected = false,
  ): void {
    if (req) this.journal.push({ req, status: err.status, error: err.message, injected });
    res.writeHead(err.status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(err.body()));
  }
}

export async function startMockLlm(opts: MockLlmOptions = {}): Promise<MockLlmServer> {
  return new MockLlmServer(opts).start();
}
