import { z } from 'zod';
import { UNNAMED_TOOL, newCallId, type ToolCall } from '@agentloop/protocol';
import { LlmError, type LlmUsage, type ModelCallRequest, type ModelResponse } from '../../../types.js';
import { streamFailure } from './map-error.js';
import { OPENAI, ReasoningItemSchema, type OutputRef, type ReasoningItem } from './provider-data.js';
import { Count, ModelName } from '../../wire.js';

// The wire boundary: every event is checked for the fields read from it (the SDK only casts the JSON it parsed). A
// field of an unexpected type reads as absent (`.catch`) rather than discarding the rest of its event; null (which
// the API sends for every unset field of a response) is accepted as absent without that detour, since a caught zod
// issue costs more than the rest of the check. Schemas strip what they do not name (each event is read from the
// SDK's object, never from a parsed copy of it): copying every key of a response object is most of the cost.
const Event = z.object({ type: z.string() });
const Str = z.string();
const opt = <T extends z.ZodType>(t: T) => t.nullish().catch(undefined);
const Index = z.number().int().min(0);
const Delta = z.object({ delta: Str, output_index: opt(Index), item_id: opt(Str), summary_index: opt(z.number()) });
const ArgsDone = z.object({ output_index: Index, arguments: Str });
const Part = z.object({ type: Str, text: opt(Str), refusal: opt(Str) });
const Item = z.object({
  type: Str,
  id: opt(Str),
  call_id: opt(Str),
  name: opt(Str),
  arguments: opt(Str),
  content: opt(z.array(z.unknown())),
});
const ItemEvent = z.object({ output_index: Index, item: Item });
const Usage = z.object({
  input_tokens: Count,
  output_tokens: Count,
  input_tokens_details: opt(z.object({ cached_tokens: Count })),
  output_tokens_details: opt(z.object({ reasoning_tokens: Count })),
});
const Failure = z.object({ code: opt(Str), message: opt(Str) });
const ResponseEvent = z.object({
  response: z.object({
    model: ModelName,
    usage: opt(Usage),
    output: opt(z.array(z.unknown())),
    error: opt(Failure),
    incomplete_details: opt(z.object({ reason: opt(Str) })),
  }),
});
/** `response.created` / `response.in_progress`: only the model is read from them. */
const ModelEvent = z.object({ response: z.object({ model: ModelName }) });
const ErrorEvent = z.object({ code: opt(Str), message: opt(Str), error: opt(Failure) });

interface Slot {
  itemId?: string;
  callId?: string;
  name: string;
  args: string;
  done: boolean;
}

/**
 * Reads a Responses stream into the canonical response: text deltas (and refusals) as text, reasoning summary
 * deltas as reasoning, function calls assembled per output_index (the `.done` events are authoritative), reasoning
 * items kept whole with the order of every output item, and the final state from `response.completed` /
 * `response.incomplete`. `response.failed` and `error` events throw, classified.
 */
export class ResponsesStreamReader {
  outputStarted = false;
  private text = '';
  private reasoning = '';
  private refused = false;
  private lastSummary = '';
  private readonly calls = new Map<number, Slot>();
  private readonly refs = new Map<number, OutputRef>();
  private readonly reasoningItems = new Map<string, ReasoningItem>();
  private readonly chars = new Map<string, number>();
  private end: { usage: z.infer<typeof Usage> | null | undefined; incomplete: string | null } | null = null;

  constructor(
    private readonly req: ModelCallRequest,
    private model: string,
  ) {}

  push(raw: unknown): void {
    const ev = Event.safeParse(raw);
    if (!ev.success) return;
    const e = ev.data; // { type } alone: the parsers below read the event itself
    switch (e.type) {
      case 'response.created':
      case 'response.in_progress': {
        const r = ModelEvent.safeParse(raw);
        if (r.success && r.data.response.model) this.model = r.data.response.model;
        return;
      }
      case 'response.output_item.added':
      case 'response.output_item.done':
        return this.item(raw, e.type.endsWith('.done'));
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        const d = Delta.safeParse(raw);
        if (!d.success || !d.data.delta) return;
        if (e.type === 'response.refusal.delta') this.refused = true;
        if (d.data.item_id) this.chars.set(d.data.item_id, (this.chars.get(d.data.item_id) ?? 0) + d.data.delta.length);
        return this.textDelta(d.data.delta);
      }
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta': {
        const d = Delta.safeParse(raw);
        if (!d.success || !d.data.delta) return;
        // summary parts (and reasoning items) are separate paragraphs
        const part = `${d.data.item_id ?? ''}#${d.data.summary_index ?? ''}`;
        const piece = this.reasoning && part !== this.lastSummary ? `\n\n${d.data.delta}` : d.data.delta;
        this.lastSummary = part;
        this.reasoning += piece;
        this.outputStarted = true;
        this.req.onReasoningDelta?.(piece);
        return;
      }
      case 'response.function_call_arguments.delta': {
        const d = Delta.safeParse(raw);
        if (d.success && typeof d.data.output_index === 'number')
          this.slot(d.data.output_index, d.data.item_id ?? undefined).args += d.data.delta;
        return;
      }
      case 'response.function_call_arguments.done': {
        const d = ArgsDone.safeParse(raw);
        if (d.success) this.slot(d.data.output_index).args = d.data.arguments;
        return;
      }
      case 'response.completed':
      case 'response.incomplete':
        return this.finished(raw, e.type === 'response.incomplete');
      case 'response.failed': {
        const r = ResponseEvent.safeParse(raw);
        const f = r.success ? r.data.response.error : null;
        throw streamFailure(f?.code, f?.message ?? 'the response failed', this.outputStarted);
      }
      case 'error': {
        const r = ErrorEvent.safeParse(raw);
        const f = r.success ? (r.data.error ?? r.data) : null;
        throw streamFailure(f?.code, f?.message ?? 'the stream reported an error', this.outputStarted);
      }
    }
  }

  private textDelta(t: string): void {
    this.text += t;
    this.outputStarted = true;
    this.req.onTextDelta?.(t);
  }

  private slot(index: number, itemId?: string): Slot {
    let s = this.calls.get(index);
    if (!s) {
      s = { itemId, name: '', args: '', done: false };
      this.calls.set(index, s);
    }
    return s;
  }

  private item(e: unknown, done: boolean): void {
    const p = ItemEvent.safeParse(e);
    if (!p.success) return;
    const { output_index: index, item } = p.data;
    if (item.type === 'function_call') {
      const s = this.slot(index, item.id ?? undefined);
      if (item.id) s.itemId = item.id;
      if (item.call_id) s.callId = item.call_id;
      if (item.name) s.name = item.name;
      if (typeof item.arguments === 'string' && (done || s.args === '')) s.args = item.arguments;
      s.done ||= done;
      if (s.itemId) this.refs.set(index, { type: 'function_call', id: s.itemId });
    } else if (item.type === 'message' && item.id) {
      this.refs.set(index, { type: 'message', id: item.id });
      // a server that sent the text only in the finished item: it is the answer all the same
      if (done && !this.chars.has(item.id))
        for (const raw of item.content ?? []) {
          const p = Part.safeParse(raw);
          if (!p.success) continue;
          const part = p.data;
          const t = part.type === 'refusal' ? part.refusal : part.text;
          if (!t) continue;
          if (part.type === 'refusal') this.refused = true;
          this.chars.set(item.id, (this.chars.get(item.id) ?? 0) + t.length);
          this.textDelta(t);
        }
    } else if (item.type === 'reasoning' && item.id) {
      this.refs.set(index, { type: 'reasoning', id: item.id });
      // kept as the wire had it (the parsed copy would reorder its keys): it goes back byte for byte
      const raw = (e as { item: unknown }).item;
      const r = ReasoningItemSchema.safeParse(raw);
      // only what can come back statelessly is kept: a reasoning item without its encrypted content cannot
      if (done && r.success && r.data.encrypted_content) this.reasoningItems.set(item.id, raw as ReasoningItem);
    }
  }

  private finished(e: unknown, incomplete: boolean): void {
    const r = ResponseEvent.safeParse(e);
    const res = r.success ? r.data.response : null;
    if (res?.model) this.model = res.model;
    const reason = incomplete ? (res?.incomplete_details?.reason ?? 'unknown') : null;
    if (reason === 'content_filter')
      throw new LlmError('content_filter', 'OpenAI stopped the response: incomplete (content_filter)', {
        outputStarted: this.outputStarted,
      });
    // nothing streamed item by item (a server that sends only the final response): read its output instead
    if (!this.refs.size && !this.calls.size && !this.text)
      (res?.output ?? []).forEach((item, output_index) => this.item({ output_index, item }, true));
    this.end = { usage: res?.usage, incomplete: reason };
  }

  /** The canonical response; throws when the stream ended before the response did. */
  finish(): ModelResponse {
    if (!this.end)
      throw new LlmError('network', 'stream ended before the response was complete', {
        outputStarted: this.outputStarted,
      });
    const cut = this.end.incomplete !== null;
    const kept = [...this.calls.entries()].sort(([a], [b]) => a - b).filter(([, s]) => s.done || !cut); // a call cut off mid-arguments is not one
    const toolCalls: ToolCall[] = kept.map(([, s]) => ({
      id: s.callId || newCallId(),
      name: s.name || UNNAMED_TOOL,
      arguments: s.args === '' ? '{}' : s.args,
      ...(s.itemId ? { providerData: { provider: OPENAI, itemId: s.itemId } } : {}),
    }));
    const keptItems = new Set(kept.map(([, s]) => s.itemId));
    const message: ModelResponse['message'] = {
      role: 'assistant',
      content: this.text === '' && toolCalls.length ? null : this.text,
    };
    if (toolCalls.length) message.toolCalls = toolCalls;
    if (this.reasoning) message.reasoning = this.reasoning;
    if (this.reasoningItems.size) {
      const output = [...this.refs.entries()]
        .sort(([a], [b]) => a - b)
        .map(([, ref]) => (ref.type === 'message' ? { ...ref, chars: this.chars.get(ref.id) ?? 0 } : ref))
        .filter((ref) =>
          ref.type === 'reasoning' ? this.reasoningItems.has(ref.id) : ref.type === 'message' || keptItems.has(ref.id),
        );
      message.providerData = {
        provider: OPENAI,
        openaiReasoning: [...this.reasoningItems.values()],
        openaiOutput: output,
      };
    }
    const u = this.end.usage;
    const usage: LlmUsage = {
      promptTokens: u?.input_tokens ?? 0,
      completionTokens: u?.output_tokens ?? 0, // reasoning included, as Chat's completion_tokens
      reasoningTokens: u?.output_tokens_details?.reasoning_tokens ?? 0,
      cachedTokens: u?.input_tokens_details?.cached_tokens ?? 0,
    };
    const finishReason: ModelResponse['finishReason'] = cut
      ? this.end.incomplete === 'max_output_tokens'
        ? 'length'
        : 'other'
      : toolCalls.length
        ? 'tool_calls'
        : this.refused
          ? 'content_filter'
          : 'stop';
    return { message, finishReason, usage, provider: OPENAI, model: this.model };
  }
}
