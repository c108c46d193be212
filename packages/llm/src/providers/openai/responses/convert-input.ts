import type { Message, ToolCall } from '@agentloop/protocol';
import type { ToolSpec } from '../../../types.js';
import { itemIdOf, providerCallIdOf, responsesDataOf, type ResponsesMessageData } from './provider-data.js';

/** A Responses API input item (the SDK's ResponseInputItem, built as plain JSON). */
export type InputItem = Record<string, unknown>;

export interface ConvertInputOptions {
  /**
   * The target is a reasoning model on OpenAI's Responses API: reasoning items OpenAI returned go back, in their
   * places, and the items they belong to keep their ids. Otherwise no reasoning item and no item id is sent.
   */
  reasoning: boolean;
}

/**
 * Canonical transcript → Responses `input` items. System messages become developer messages where they stand (the
 * prefix the prompt cache sees stays the same from call to call); user and assistant text become messages; tool
 * calls become `function_call` items (call_id: OpenAI's own id when the loop replaced it) and tool results
 * `function_call_output` items. Reasoning and item ids travel only for turns the Responses API produced.
 */
export function toResponsesInput(messages: readonly Message[], opts: ConvertInputOptions): InputItem[] {
  const callIds = new Map<string, string>();
  const used = new Set<string>();
  const items: InputItem[] = [];
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        items.push({ type: 'message', role: 'developer', content: m.content ?? '' });
        break;
      case 'user':
        items.push({ type: 'message', role: 'user', content: m.content ?? '' });
        break;
      case 'tool':
        items.push({
          type: 'function_call_output',
          call_id: callIds.get(m.toolCallId ?? '') ?? m.toolCallId ?? '',
          output: m.content ?? '',
        });
        break;
      case 'assistant': {
        const calls = (m.toolCalls ?? []).map((c) => {
          // a provider id the transcript already used (ids repeated across turns) would pair ambiguously: ours then
          const own = providerCallIdOf(c);
          const callId = used.has(own) ? c.id : own;
          used.add(callId);
          callIds.set(c.id, callId);
          return { call: c, callId };
        });
        const data = opts.reasoning ? responsesDataOf(m) : null;
        items.push(...(data ? withReasoning(m, calls, data) : plain(m, calls)));
        break;
      }
    }
  }
  return items;
}

type SentCall = { call: ToolCall; callId: string };

const functionCall = ({ call, callId }: SentCall, withId: boolean): InputItem => {
  const id = withId ? itemIdOf(call) : undefined;
  return { type: 'function_call', ...(id ? { id } : {}), call_id: callId, name: call.name, arguments: call.arguments };
};

/** A turn without Responses reasoning (another provider's, Chat Completions', or a non-reasoning target). */
function plain(m: Message, calls: SentCall[]): InputItem[] {
  const out: InputItem[] = [];
  if (m.content) out.push({ type: 'message', role: 'assistant', content: m.content });
  for (const c of calls) out.push(functionCall(c, false));
  return out;
}

/**
 * A Responses turn with reasoning, item by item in the order OpenAI produced them: each reasoning item exactly as
 * received, followed by the message or function calls it led to (with their ids, which tie them to it).
 */
function withReasoning(m: Message, calls: SentCall[], data: ResponsesMessageData): InputItem[] {
  const reasoning = new Map(data.openaiReasoning.map((r) => [r.id, r]));
  const byItem = new Map<string, SentCall>();
  for (const c of calls) {
    const id = itemIdOf(c.call);
    if (id) byItem.set(id, c);
  }
  const content = m.content ?? '';
  const messageRefs = data.openaiOutput.filter((r) => r.type === 'message');
  // the text is cut back into its message items when their lengths add up; else it all goes to the first one
  const split = messageRefs.reduce((n, r) => n + (r.chars ?? 0), 0) === content.length;
  let at = 0;
  let textSent = false;
  const sent = new Set<SentCall>();
  const out: InputItem[] = [];
  for (const ref of data.openaiOutput) {
    if (ref.type === 'reasoning') {
      const item = reasoning.get(ref.id);
      if (item) out.push(item);
    } else if (ref.type === 'message') {
      const text = split ? content.slice(at, (at += ref.chars ?? 0)) : textSent ? '' : content;
      if (!text) continue;
      textSent = true;
      out.push({
        type: 'message',
        role: 'assistant',
        id: ref.id,
        status: 'completed',
        content: [{ type: 'output_text', text, annotations: [] }],
      });
    } else {
      const c = byItem.get(ref.id);
      if (!c || sent.has(c)) continue;
      sent.add(c);
      out.push(functionCall(c, true));
    }
  }
  if (!textSent && content) out.unshift({ type: 'message', role: 'assistant', content });
  for (const c of calls) if (!sent.has(c)) out.push(functionCall(c, false));
  // a reasoning item must be followed by the item it led to: one left at the end (its item is gone) is not sent
  while (out.length && out[out.length - 1]!.type === 'reasoning') out.pop();
  return out;
}

/** Tools in the order given; `strict: false` keeps any JSON Schema the tool declares acceptable. */
export function toResponsesTools(tools: readonly ToolSpec[]): InputItem[] {
  return tools.map((t) => ({
    type: 'function',
    name: t.name,
    description: t.description,
    parameters: t.parameters,
    strict: false,
  }));
}
