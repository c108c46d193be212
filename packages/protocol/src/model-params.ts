import { z } from 'zod';

// A run's `model.params` go to the provider (a few are read by the adapters first). Known settings are checked at
// intake, so a wrong type is a 400 naming the field rather than a run that fails at its first model call; unknown
// keys pass through (providers add settings faster than this list).
const num = z.number();
const int = z.number().int();
const positiveInt = z.number().int().positive();
const stops = z.union([z.string(), z.array(z.string()).max(16)]);

/** Chat Completions / Responses settings (openai, deepseek, openai-compatible). */
const OpenAIParamsSchema = z.looseObject({
  temperature: num.nullish(),
  top_p: num.nullish(),
  presence_penalty: num.nullish(),
  frequency_penalty: num.nullish(),
  seed: int.nullish(),
  max_tokens: positiveInt.nullish(),
  max_completion_tokens: positiveInt.nullish(),
  max_output_tokens: positiveInt.nullish(),
  stop: stops.nullish(),
  reasoning_effort: z.string().nullish(),
  reasoning: z.record(z.string(), z.unknown()).nullish(),
  text: z.record(z.string(), z.unknown()).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: int.min(0).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  logit_bias: z.record(z.string(), num).nullish(),
  user: z.string().nullish(),
  service_tier: z.string().nullish(),
});

/** Gemini generation settings. */
const GeminiParamsSchema = z.looseObject({
  temperature: num.nullish(),
  topP: num.nullish(),
  topK: num.nullish(),
  candidateCount: positiveInt.nullish(),
  maxOutputTokens: positiveInt.nullish(),
  stopSequences: stops.nullish(),
  presencePenalty: num.nullish(),
  frequencyPenalty: num.nullish(),
  seed: int.nullish(),
  responseLogprobs: z.boolean().nullish(),
  logprobs: int.nullish(),
  safetySettings: z.array(z.strictObject({ category: z.string(), threshold: z.string() })).nullish(), // `method` is Vertex's only
  thinkingConfig: z
    .looseObject({
      includeThoughts: z.boolean().nullish(),
      thinkingBudget: int.nullish(),
      thinkingLevel: z.string().nullish(),
    })
    .nullish(),
  mediaResolution: z.string().nullish(),
  responseModalities: z.array(z.string()).nullish(),
});

/** The issues of a model spec's known params, at `params.<key>` (a refinement of a request's model and fallbacks). */
export function paramsIssues(m: { provider: string; params: Record<string, unknown> }, ctx: z.RefinementCtx): void {
  const r = (m.provider === 'google' ? GeminiParamsSchema : OpenAIParamsSchema).safeParse(m.params);
  if (!r.success)
    for (const issue of r.error.issues)
      ctx.addIssue({ code: 'custom', path: ['params', ...issue.path], message: issue.message });
}
