import { randomBytes } from 'node:crypto';
import type { ResponsesLedger } from './responses-ledger.js';
import type { ReplySpec } from './types.js';

export interface RenderContext {
  model: string;
  /** The model reasons (o-series, gpt-5): its output starts with a reasoning item. */
  reasons: boolean;
  /** The request asked for `reasoning.encrypted_content`. */
  encrypted: boolean;
  promptTokens: number;
  /** The call ids to use, one per spec call (as for Chat). */
  callIds: string[];
  ledger: ResponsesLedger;
}

type Json = Record<string, unknown>;
type OutputItem =
  | { kind: 'reasoning'; item: Json; parts: string[] }
  | { kind: 'message'; item: Json; text: string; refusal: boolean }
  | { kind: 'function_call'; item: Json; args: string };

const hex = (n: number) => randomBytes(n).toString('hex');

/** The reply's output items (issuing reasoning items in the ledger, with what follows them). */
function outputItems(spec: ReplySpec, ctx: RenderContext): OutputItem[] {
  const out: OutputItem[] = [];
  let reasoningId: string | null = null;
  if (ctx.reasons || spec.reasoning) {
    const parts = spec.reasoning ? spec.reasoning.split('\n\n') : [];
    const issued =
      ctx.reasons && ctx.encrypted ? ctx.ledger.issueReasoning() : { id: `rs_${hex(24)}`, encrypted: null };
    reasoningId = issued.encrypted ? issued.id : null;
    const item: Json = {
      id: issued.id,
      type: 'reasoning',
      ...(issued.encrypted ? { encrypted_content: issued.encrypted } : {}),
      summary: parts.map((text) => ({ type: 'summary_text', text })),
    };
    out.push({ kind: 'reasoning', item, parts });
  }
  const text = spec.refusal ?? spec.text;
  if (text) {
    const part =
      spec.refusal !== undefined
        ? { type: 'refusal', refusal: text }
        : { type: 'output_text', annotations: [], logprobs: [], text };
    out.push({
      kind: 'message',
      item: { id: `msg_${hex(24)}`, type: 'message', status: 'completed', content: [part], role: 'assistant' },
      text,
      refusal: spec.refusal !== undefined,
    });
  }
  (spec.toolCalls ?? []).forEach((c, i) => {
    const args = c.arguments ?? JSON.stringify(c.args ?? {});
    const item = {
      id: `fc_${hex(24)}`,
      type: 'function_call',
      status: 'completed',
      arguments: args,
      call_id: ctx.callIds[i] || `call_${randomBytes(18).toString('base64url').slice(0, 24)}`,
      name: c.name,
    };
    if (reasoningId) ctx.ledger.callAfter(reasoningId, item.id, item.call_id);
    out.push({ kind: 'function_call', item, args });
  });
  if (reasoningId && out[1]) ctx.ledger.followed(reasoningId, String(out[1].item.id));
  return out;
}

function usageOf(spec: ReplySpec, promptTokens: number): Json {
  const completion =
    spec.usage?.completion ??
    Math.max(1, Math.ceil(((spec.text?.length ?? 0) + JSON.stringify(spec.toolCalls ?? []).length) / 4));
  const reasoning = spec.usage?.reasoning ?? Math.ceil((spec.reasoning?.length ?? 0) / 4);
  const input = spec.usage?.prompt ?? promptTokens;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: spec.usage?.cached ?? 0 },
    output_tokens: completion + reasoning,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: input + completion + reasoning,
  };
}

function responseObject(id: string, ctx: RenderContext, status: string, extra: Json = {}): Json {
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model: ctx.model,
    output: [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: ctx.reasons ? 'medium' : null, summary: null },
    store: false,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: null,
    metadata: {},
    ...extra,
  };
}

/** A piece of streamed text as the chunking mode cuts it. */
const pieces = (s: string, mode: ReplySpec['chunking']) =>
  !mode || mode === 'whole' ? [s] : (s.match(/[\s\S]{1,3}/g) ?? ['']);

/**
 * The reply as the Responses API streams it: created, in_progress, each output item (reasoning with summary parts,
 * the message with its content part, function calls with argument deltas), then completed — or incomplete, or an
 * `error` event and `response.failed`. `content` marks the delta events (for cutAfterFrames).
 */
export function responsesEvents(spec: ReplySpec, ctx: RenderContext): Array<{ event: Json; content: boolean }> {
  const id = `resp_${hex(24)}`;
  const events: Array<{ event: Json; content: boolean }> = [];
  const emit = (type: string, fields: Json, content = false) =>
    events.push({ event: { type, sequence_number: events.length, ...fields }, content });
  emit('response.created', { response: responseObject(id, ctx, 'in_progress') });
  emit('response.in_progress', { response: responseObject(id, ctx, 'in_progress') });
  if (spec.failure) {
    // as recorded from the real API: the error nested under `error` (the SDK throws it as an APIError)
    const { code, message } = spec.failure;
    emit('error', {
      error: {
        type: code === 'context_length_exceeded' ? 'invalid_request_error' : code,
        code,
        message,
        param: spec.failure.param ?? null,
      },
    });
    emit('response.failed', {
      response: responseObject(id, ctx, 'failed', {
        error: { code: spec.failure.code, message: spec.failure.message },
      }),
    });
    return events;
  }
  const items = outputItems(spec, ctx);
  const cut = spec.incomplete === 'max_output_tokens';
  const calls: Array<{ index: number; item: Json; frags: string[] }> = [];
  items.forEach((o, index) => {
    const item_id = o.item.id;
    if (o.kind === 'reasoning') {
      emit('response.output_item.added', { output_index: index, item: { ...o.item, summary: [] } });
      o.parts.forEach((text, summary_index) => {
        emit('response.reasoning_summary_part.added', {
          item_id,
          output_index: index,
          summary_index,
          part: { type: 'summary_text', text: '' },
        });
        for (const delta of pieces(text, spec.chunking))
          emit('response.reasoning_summary_text.delta', { item_id, output_index: index, summary_index, delta }, true);
        emit('response.reasoning_summary_text.done', { item_id, output_index: index, summary_index, text });
        emit('response.reasoning_summary_part.done', {
          item_id,
          output_index: index,
          summary_index,
          part: { type: 'summary_text', text },
        });
      });
      emit('response.output_item.done', { output_index: index, item: o.item });
    } else if (o.kind === 'message') {
      const part = (o.item.content as Json[])[0]!;
      const kind = o.refusal ? 'refusal' : 'output_text';
      emit('response.output_item.added', {
        output_index: index,
        item: { ...o.item, status: 'in_progress', content: [] },
      });
      emit('response.content_part.added', {
        item_id,
        output_index: index,
        content_index: 0,
        part: o.refusal ? { type: 'refusal', refusal: '' } : { ...part, text: '' },
      });
      for (const delta of pieces(o.text, spec.chunking))
        emit(
          o.refusal ? 'response.refusal.delta' : 'response.output_text.delta',
          { item_id, output_index: index, content_index: 0, delta, ...(o.refusal ? {} : { logprobs: [] }) },
          true,
        );
      emit(`response.${o.refusal ? 'refusal' : 'output_text'}.done`, {
        item_id,
        output_index: index,
        content_index: 0,
        [kind === 'refusal' ? 'refusal' : 'text']: o.text,
        ...(o.refusal ? {} : { logprobs: [] }),
      });
      emit('response.content_part.done', { item_id, output_index: index, content_index: 0, part });
      emit('response.output_item.done', { output_index: index, item: o.item });
    } else {
      const frags = !spec.chunking || spec.chunking === 'whole' ? [o.args] : (o.args.match(/[\s\S]{1,4}/g) ?? ['']);
      calls.push({ index, item: o.item, frags: cut ? frags.slice(0, Math.ceil(frags.length / 2)) : frags });
    }
  });
  // function calls: one after another, or (interleaved) every call opened, then their fragments alternating
  const open = (c: (typeof calls)[number]) =>
    emit('response.output_item.added', {
      output_index: c.index,
      item: { ...c.item, status: 'in_progress', arguments: '' },
    });
  const frag = (c: (typeof calls)[number], delta: string) =>
    emit('response.function_call_arguments.delta', { item_id: c.item.id, output_index: c.index, delta }, true);
  const close = (c: (typeof calls)[number]) => {
    if (cut) return; // cut off by max_output_tokens mid-arguments: never finished
    emit('response.function_call_arguments.done', {
      item_id: c.item.id,
      output_index: c.index,
      arguments: c.item.arguments,
    });
    emit('response.output_item.done', { output_index: c.index, item: c.item });
  };
  if (spec.chunking === 'interleaved') {
    calls.forEach(open);
    for (let k = 0; k < Math.max(0, ...calls.map((c) => c.frags.length)); k++)
      for (const c of calls) if (c.frags[k] !== undefined) frag(c, c.frags[k]!);
    calls.forEach(close);
  } else
    for (const c of calls) {
      open(c);
      for (const f of c.frags) frag(c, f);
      close(c);
    }
  const output = cut ? items.filter((o) => o.kind !== 'function_call').map((o) => o.item) : items.map((o) => o.item);
  const usage = usageOf(spec, ctx.promptTokens);
  if (spec.incomplete)
    emit('response.incomplete', {
      response: responseObject(id, ctx, 'incomplete', {
        output,
        usage,
        incomplete_details: { reason: spec.incomplete },
      }),
    });
  else emit('response.completed', { response: responseObject(id, ctx, 'completed', { output, usage }) });
  return events;
}

/** One event as an SSE frame (the API names each event). */
export const sseFrame = (event: Json): string => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`;

/** The reply as one non-streamed Response object. */
export function responsesJson(spec: ReplySpec, ctx: RenderContext): Json {
  return responsesEvents(spec, ctx).at(-1)!.event.response as Json;
}
