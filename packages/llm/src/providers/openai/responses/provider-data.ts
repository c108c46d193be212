import { z } from 'zod';
import type { Message, ToolCall } from '@agentloop/protocol';

/** Provider data produced by the Responses API is sent back to OpenAI's Responses API only. */
export const OPENAI = 'openai';

/**
 * A reasoning item as the Responses API returned it (`output_item.done`), kept whole: it goes back byte for byte.
 * Unknown fields are kept too (passthrough) — what OpenAI adds to the item is OpenAI's to read.
 */
export const ReasoningItemSchema = z.looseObject({
  type: z.literal('reasoning'),
  id: z.string().min(1),
  encrypted_content: z.string().nullish(),
  summary: z.array(z.looseObject({ type: z.string(), text: z.string() })).optional(),
});
export type ReasoningItem = z.infer<typeof ReasoningItemSchema>;

/** One entry of a response's output order: a reasoning item, a message (with the length of its text), a function call. */
export const OutputRefSchema = z.object({
  type: z.enum(['reasoning', 'message', 'function_call']),
  id: z.string().min(1),
  chars: z.number().int().min(0).optional(),
});
export type OutputRef = z.infer<typeof OutputRefSchema>;

/**
 * What an assistant message answered by the Responses API keeps in its `providerData` (beside `provider` and
 * `model`, which the loop sets): the reasoning items, and the order of every output item (reasoning items
 * precede the message or the function calls they led to; on the way back they keep their places).
 */
export const ResponsesMessageDataSchema = z.object({
  provider: z.literal(OPENAI),
  openaiReasoning: z.array(ReasoningItemSchema).min(1),
  openaiOutput: z.array(OutputRefSchema),
});
export type ResponsesMessageData = z.infer<typeof ResponsesMessageDataSchema>;

/**
 * A message's Responses data when it has some (an OpenAI Responses turn with reasoning), else null. Checked against
 * the schema, but what is returned is the stored objects themselves — their keys in the order OpenAI sent them.
 */
export function responsesDataOf(m: Message): ResponsesMessageData | null {
  if (!ResponsesMessageDataSchema.safeParse(m.providerData).success) return null;
  return m.providerData as ResponsesMessageData;
}

/** A call's provider data: the function_call item id (`fc_…`) and OpenAI's call_id when ours replaced it. */
interface CallData {
  provider?: unknown;
  itemId?: unknown;
  providerCallId?: unknown;
}

/** The `fc_…` item id of a call the Responses API made, else undefined. */
export function itemIdOf(c: ToolCall): string | undefined {
  const pd = c.providerData as CallData | undefined;
  return pd?.provider === OPENAI && typeof pd.itemId === 'string' && pd.itemId ? pd.itemId : undefined;
}

/** The call_id OpenAI gave the call (when the loop renamed it), else the canonical id. */
export function providerCallIdOf(c: ToolCall): string {
  const pd = c.providerData as CallData | undefined;
  return pd?.provider === OPENAI && typeof pd.providerCallId === 'string' && pd.providerCallId
    ? pd.providerCallId
    : c.id;
}
