import type http from 'node:http';
import { randomBytes } from 'node:crypto';
import { openAIDeltas } from './openai-wire.js';
import type { MockRequest, ReplySpec } from './types.js';
import { cutStream } from './cut-stream.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const rid = (n: number) => randomBytes(n).toString('base64url').slice(0, n);

/** The `usage` of a Chat Completions answer: the spec's figures, or estimates from its text, calls and reasoning. */
export function chatUsage(spec: ReplySpec, promptTokens: number) {
  const completion =
    spec.usage?.completion ??
    Math.max(1, Math.ceil(((spec.text?.length ?? 0) + JSON.stringify(spec.toolCalls ?? []).length) / 4));
  const reasoning = spec.usage?.reasoning ?? Math.ceil((spec.reasoning?.length ?? 0) / 4);
  const prompt = spec.usage?.prompt ?? promptTokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion + reasoning,
    total_tokens: prompt + completion + reasoning,
    prompt_tokens_details: { cached_tokens: spec.usage?.cached ?? 0 },
    completion_tokens_details: { reasoning_tokens: reasoning },
  };
}

/** A Chat Completions SSE stream of the spec (a role frame, its deltas, the finish frame, usage when asked, [DONE]). */
export async function streamChat(
  res: http.ServerResponse,
  req: MockRequest,
  spec: ReplySpec,
  ids: string[],
  usage: object,
): Promise<void> {
  const id = `chatcmpl-${rid(29)}`;
  const created = Math.floor(Date.now() / 1000);
  const frame = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: req.model, system_fingerprint: 'fp_mock', choices, ...extra, usage: extra.usage ?? null })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.write(
    frame([
      {
        index: 0,
        delta: { role: 'assistant', content: spec.toolCalls?.length && !spec.text ? null : '' },
        logprobs: null,
        finish_reason: null,
      },
    ]),
  );
  let sent = 0;
  for (const delta of openAIDeltas(spec, ids)) {
    if (spec.delayMs) await sleep(spec.delayMs);
    if (spec.cutAfterFrames !== undefined && sent >= spec.cutAfterFrames) {
      await cutStream(res);
      return;
    }
    if (res.destroyed) return;
    res.write(frame([{ index: 0, delta, logprobs: null, finish_reason: null }]));
    sent++;
  }
  const finish = spec.toolCalls?.length ? 'tool_calls' : 'stop';
  res.write(frame([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }]));
  if ((req.body.stream_options as { include_usage?: boolean } | undefined)?.include_usage)
    res.write(frame([], { usage }));
  res.end('data: [DONE]\n\n');
}

/** A Chat Completions JSON body of the spec. */
export function completeChat(
  res: http.ServerResponse,
  req: MockRequest,
  spec: ReplySpec,
  ids: string[],
  usage: object,
): void {
  const toolCalls = (spec.toolCalls ?? []).map((c, i) => ({
    id: ids[i] || `call_${rid(24)}`,
    type: 'function',
    function: { name: c.name, arguments: c.arguments ?? JSON.stringify(c.args ?? {}) },
  }));
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: spec.text ?? (toolCalls.length ? null : ''),
    refusal: null,
    annotations: [],
  };
  if (toolCalls.length) message.tool_calls = toolCalls;
  if (spec.reasoning) message.reasoning_content = spec.reasoning;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: `chatcmpl-${rid(29)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: req.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: toolCalls.length ? 'tool_calls' : 'stop' }],
      usage,
    }),
  );
}
