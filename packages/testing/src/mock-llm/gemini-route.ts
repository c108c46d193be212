import type http from 'node:http';
import { WireError, estimateTokens } from './openai-wire.js';
import { geminiFrameList, geminiResponse, parseGeminiRequest } from './gemini-wire.js';
import { applyStop } from './stop-sequences.js';
import type { JournalEntry, MockRequest, Script } from './types.js';

/** What the Gemini route needs of the server it runs in. */
export interface GeminiHost {
  journal: JournalEntry[];
  script: Script;
  /** The request's number in the server's arrival order. */
  nextSeq(): number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Gemini API (`:streamGenerateContent?alt=sse`): scripted replies rendered in Gemini's SSE format, or raw replays. */
export async function serveGemini(
  host: GeminiHost,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  model: string,
  stream: boolean,
  receivedAt: bigint,
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
  const entryReq: MockRequest = {
    seq: host.nextSeq(),
    provider: 'google',
    wire: 'gemini',
    model,
    stream,
    messages: [],
    tools: [],
    body,
    headers: req.headers,
    receivedAt,
  };
  try {
    Object.assign(entryReq, parseGeminiRequest(body, model));
  } catch (e) {
    if (!(e instanceof WireError)) throw e;
    host.journal.push({ req: entryReq, status: 400, error: e.message, injected: false });
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 400, message: e.message, status: 'INVALID_ARGUMENT' } }));
    return;
  }
  const spec = applyStop(await host.script(entryReq), body.generationConfig?.stopSequences);
  if (spec.error) {
    host.journal.push({ req: entryReq, status: spec.error.status, error: spec.error.message, injected: true });
    res.writeHead(spec.error.status, { 'content-type': 'application/json', ...(spec.error.headers ?? {}) });
    res.end(
      JSON.stringify(
        spec.error.body ?? {
          error: {
            code: spec.error.status,
            message: spec.error.message ?? 'injected',
            status: spec.error.status === 429 ? 'RESOURCE_EXHAUSTED' : 'INTERNAL',
          },
        },
      ),
    );
    return;
  }
  // rendered before the status line: a reply the Gemini wire cannot carry (args that are not a JSON object) is the
  // script's mistake, answered 500 with the reason, never a 200 with a broken body
  let frames: string[] | null = null;
  let whole: unknown = null;
  try {
    if (!stream) whole = spec.rawJson ?? geminiResponse(spec, model, estimateTokens(entryReq));
    else if (spec.rawSse === undefined) frames = geminiFrameList(spec, model, estimateTokens(entryReq));
  } catch (e) {
    const message = `mock: this reply cannot be rendered on the Gemini wire (a call's args must be a JSON object): ${e instanceof Error ? e.message : String(e)}`;
    host.journal.push({ req: entryReq, status: 500, error: message, injected: false });
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 500, message, status: 'INTERNAL' } }));
    return;
  }
  host.journal.push({ req: entryReq, status: 200, injected: false });
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(whole));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (!frames || !spec.delayMs) return void res.end(spec.rawSse ?? frames!.join(''));
  for (const frame of frames) {
    await sleep(spec.delayMs);
    if (res.destroyed) return;
    res.write(frame);
  }
  res.end();
}
