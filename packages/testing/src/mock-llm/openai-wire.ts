import type { Message } from '@agentloop/protocol';
import type { MockRequest, ReplySpec } from './types.js';
import { chatResponseFormat } from './structured-output-wire.js';

/** OpenAI's own 400 texts for broken pairing, as the real API words them. */
export const OPENAI_REASONING_MODEL = /^(o1|o3|o4|gpt-5)/;

export const OPENAI_ERRORS = {
  orphanTool:
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
  missingResults: (ids: string[]) =>
    `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${ids.join(', ')}`,
  unsupportedStop: "Unsupported parameter: 'stop' is not supported with this model.",
  contextLength: (limit: number, tokens: number) =>
    `This model's maximum context length is ${limit} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
};

export class WireError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type = 'invalid_request_error',
  ) {
    super(message);
  }
  body() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

const text = (c: unknown): string | null => {
  if (c == null) return null;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return String(c);
};

/** Parse and validate a Chat Completions body like the real API: throws WireError with the API's own text. */
export function parseOpenAIRequest(
  body: Record<string, unknown>,
  provider: MockRequest['provider'],
): Pick<MockRequest, 'model' | 'stream' | 'messages' | 'tools' | 'output'> {
  if (typeof body.model !== 'string' || !body.model)
    throw new WireError(400, 'you must provide a model parameter', 'model');
  // OpenAI's reasoning models (o-series, gpt-5) reject stop sequences
  if (provider === 'openai' && body.stop !== undefined && body.stop !== null && OPENAI_REASONING_MODEL.test(body.model))
    throw new WireError(400, OPENAI_ERRORS.unsupportedStop, 'stop', 'unsupported_parameter');
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw new WireError(
      400,
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      'messages',
      'empty_array',
    );
  const messages: Message[] = [];
  let open: { ids: string[]; answered: Set<string> } | null = null;
  const closeOpen = () => {
    if (open) {
      const missing = open.ids.filter((id) => !open!.answered.has(id));
      if (missing.length) throw new WireError(400, OPENAI_ERRORS.missingResults(missing), 'messages');
    }
    open = null;
  };
  body.messages.forEach((raw: Record<string, unknown>, i: number) => {
    const role = raw?.role === 'developer' ? 'system' : raw?.role;
    if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'tool')
      throw new WireError(
        400,
        `Invalid value: '${String(raw?.role)}'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'.`,
        `messages[${i}].role`,
        'invalid_value',
      );
    if (role === 'tool') {
      const id = raw.tool_call_id;
      if (typeof id !== 'string')
        throw new WireError(
          400,
          `Missing required parameter: 'messages[${i}].tool_call_id'.`,
          `messages[${i}].tool_call_id`,
          'missing_required_parameter',
        );
      if (!open || !open.ids.includes(id)) throw new WireError(400, OPENAI_ERRORS.orphanTool, `messages.[${i}].role`);
      open.answered.add(id);
      messages.push({ role: 'tool', content: text(raw.content) ?? '', toolCallId: id });
      return;
    }
    closeOpen();
    const m: Message = { role, content: text(raw.content) };
    if (role === 'assistant') {
      const tcs = Array.isArray(raw.tool_calls) ? (raw.tool_calls as Array<Record<string, any>>) : [];
      if (tcs.length) {
        m.toolCalls = tcs.map((tc, k) => {
          if (typeof tc?.id !== 'string')
            throw new WireError(
              400,
              `Missing required parameter: 'messages[${i}].tool_calls[${k}].id'.`,
              `messages[${i}].tool_calls[${k}].id`,
              'missing_required_parameter',
            );
          return { id: tc.id, name: String(tc.function?.name ?? ''), arguments: String(tc.function?.arguments ?? '') };
        });
        open = { ids: m.toolCalls.map((c) => c.id), answered: new Set() };
      }
      if (typeof raw.reasoning_content === 'string') m.reasoning = raw.reasoning_content;
      if (
        provider === 'deepseek' &&
        m.toolCalls?.length &&
        typeof raw.reasoning_content !== 'string' &&
        stepHasReasoning(body)
      )
        throw new WireError(
          400,
          'Missing `reasoning_content` field in the assistant message at message index ' +
            i +
            '. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls',
          null,
        );
    }
    messages.push(m);
  });
  closeOpen();
  const tools = Array.isArray(body.tools)
    ? (body.tools as Array<Record<string, any>>).map((t) => String(t?.function?.name ?? ''))
    : [];
  const output = chatResponseFormat(body, provider);
  return { model: body.model, stream: body.stream === true, messages, tools, ...(output ? { output } : {}) };
}

/** DeepSeek enforces reasoning round-trips only in thinking mode (reasoner models or thinking enabled). */
function stepHasReasoning(body: Record<string, unknown>): boolean {
  return /reasoner|v4/.test(String(body.model)) || (body.thinking as { type?: string } | undefined)?.type === 'enabled';
}

/** Rough token estimate the mock uses for its context window and usage (4 characters a token). */
export function estimateTokens(req: Pick<MockRequest, 'messages' | 'body'>): number {
  let chars = 0;
  for (const m of req.messages) {
    chars += (m.content?.length ?? 0) + (m.reasoning?.length ?? 0) + 4;
    for (const c of m.toolCalls ?? []) chars += c.name.length + c.arguments.length + 8;
  }
  if (Array.isArray(req.body.tools)) chars += JSON.stringify(req.body.tools).length;
  return Math.ceil(chars / 4);
}

interface Delta {
  content?: string;
  reasoning_content?: string;
  tool_calls?: Array<{ index: number; id?: string; type?: 'function'; function: { name?: string; arguments: string } }>;
}

/** The stream of deltas for a reply, cut as the spec's chunking asks. */
export function openAIDeltas(spec: ReplySpec, ids: string[]): Delta[] {
  const mode = spec.chunking ?? 'whole';
  const pieces = (s: string) => (mode === 'whole' ? [s] : (s.match(/[\s\S]{1,3}/g) ?? ['']));
  const out: Delta[] = [];
  if (spec.reasoning) for (const p of pieces(spec.reasoning)) out.push({ reasoning_content: p });
  if (spec.text) for (const p of pieces(spec.text)) out.push({ content: p });
  const calls = (spec.toolCalls ?? []).map((c, index) => {
    const args = c.arguments ?? JSON.stringify(c.args ?? {});
    const head = {
      index,
      ...(ids[index] ? { id: ids[index] } : {}),
      type: 'function' as const,
      function: { name: c.name, arguments: '' },
    };
    const frags = mode === 'whole' ? [args] : (args.match(/[\s\S]{1,4}/g) ?? ['']);
    if (mode === 'restated') frags.push(args);
    return [
      { tool_calls: [head] },
      ...frags.map((a) => ({ tool_calls: [{ index, function: { arguments: a } }] })),
    ] as Delta[];
  });
  if (mode === 'interleaved') {
    const max = Math.max(0, ...calls.map((c) => c.length));
    for (let k = 0; k < max; k++) for (const c of calls) if (c[k]) out.push(c[k]!);
  } else for (const c of calls) out.push(...c);
  return out;
}
