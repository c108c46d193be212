import { z } from 'zod';
import { Str } from '../wire.js';

/** Stop sequences as a setting may give them: one string, or the strings of a list. */
export const stringsOf = (v: unknown): string[] =>
  typeof v === 'string' ? [v] : Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];

/** A safety setting as the Gemini API takes it (`method` is Vertex's only: the SDK throws on it for the Gemini API). */
const SafetySetting = z.object({ category: Str, threshold: Str });

/**
 * The generation settings a request's `model.params` may set, each with its type. Anything else — `httpOptions` (the
 * SDK would send the key to another host), `headers`, `extraBody`, `tools`, `cachedContent`, `systemInstruction` — is
 * the engine's. A setting of another type is not sent: the SDK reads and transforms the config locally, and a
 * value it cannot take would throw there — retried as if the network had failed, then failing the run.
 */
const GENERATION_PARAMS: Record<string, z.ZodType> = {
  temperature: z.number(),
  topP: z.number(),
  topK: z.number(),
  candidateCount: z.number().int(),
  maxOutputTokens: z.number().int(),
  stopSequences: z.union([Str, z.array(z.unknown())]).transform((v) => stringsOf(v)),
  presencePenalty: z.number(),
  frequencyPenalty: z.number(),
  seed: z.number().int(),
  responseLogprobs: z.boolean(),
  logprobs: z.number().int(),
  safetySettings: z.array(z.unknown()).transform((list) =>
    list.flatMap((item) => {
      const r = SafetySetting.safeParse(item);
      return r.success ? [r.data] : [];
    }),
  ),
  thinkingConfig: z.looseObject({
    includeThoughts: z.boolean().optional(),
    thinkingBudget: z.number().int().optional(),
    thinkingLevel: Str.optional(),
  }),
  mediaResolution: Str,
  responseModalities: z.array(Str),
};

export function generationParams(params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) {
    const schema = Object.hasOwn(GENERATION_PARAMS, k) ? GENERATION_PARAMS[k] : undefined;
    const r = schema?.safeParse(v);
    // a list that kept nothing (stop sequences or safety settings none of which was well-formed) is not sent either
    if (r?.success && !(Array.isArray(r.data) && r.data.length === 0 && Array.isArray(v) && v.length > 0))
      out[k] = r.data;
  }
  return out;
}
