import type { ModelCallRequest } from '../../../types.js';
import { toStrictSchema } from '../../../structured-output/strict-schema.js';
import { isOpenAIReasoningModel } from '../openai-client.js';
import { toResponsesInput, toResponsesTools } from './convert-input.js';

/**
 * Request fields a run's `model.params` may not set: the loop owns them (statelessness included: no stored
 * responses, no previous_response_id, no conversation), and Chat Completions' own fields have no place here.
 */
const RESERVED_PARAMS = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'stream',
  'stream_options',
  'store',
  'include',
  'previous_response_id',
  'conversation',
  'background',
  'prompt',
  'prompt_cache_key',
  'messages',
  'n',
  'stop',
  'response_format',
]);

/** Settings `renamed` reads (and sends, well-typed, under the Responses API's names). */
const RENAMED = new Set(['max_output_tokens', 'max_completion_tokens', 'max_tokens', 'reasoning', 'reasoning_effort']);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Chat Completions' names of settings the Responses API also has, for runs written against Chat. The adapter reads
 * these itself, so it takes only well-typed values: the first token limit that is a positive integer, an effort that
 * is a string, a `reasoning` that is an object; one of another type is not sent (never a body that throws or a
 * `reasoning` spread from a string).
 */
function renamed(params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const tokens = [params.max_output_tokens, params.max_completion_tokens, params.max_tokens].find(
    (v) => typeof v === 'number' && Number.isSafeInteger(v) && v > 0,
  );
  if (tokens !== undefined) out.max_output_tokens = tokens;
  const reasoning = isPlainObject(params.reasoning) ? params.reasoning : undefined;
  const effort = typeof params.reasoning_effort === 'string' ? params.reasoning_effort : undefined;
  if (reasoning || effort !== undefined) out.reasoning = { ...reasoning, ...(effort !== undefined ? { effort } : {}) };
  return out;
}

/**
 * The body of one streamed, stateless Responses call: `store: false`, never `previous_response_id`; reasoning models
 * get `include: ["reasoning.encrypted_content"]` (other models refuse it) and their reasoning items back; structured
 * output goes in `text.format`; `prompt_cache_key` keys OpenAI's prompt cache. No `stop`: the API has none (the
 * ReAct parser stops at an invented Observation by itself).
 */
export function responsesBody(req: ModelCallRequest): Record<string, unknown> {
  const reasoningModel = isOpenAIReasoningModel(req.model.name);
  const params: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(req.model.params ?? {}))
    if (!RESERVED_PARAMS.has(k) && !RENAMED.has(k)) params[k] = v;
  Object.assign(params, renamed(req.model.params ?? {}));
  const output = req.output;
  let text = params.text;
  if (output) {
    const strict = toStrictSchema(output.schema);
    const format = {
      type: 'json_schema',
      name: output.name,
      schema: strict.ok ? strict.schema : output.schema,
      strict: strict.ok,
    };
    text = { ...(isPlainObject(text) ? text : {}), format };
  }
  return {
    ...params,
    ...(text !== undefined ? { text } : {}),
    model: req.model.name,
    input: toResponsesInput(req.messages, { reasoning: reasoningModel }),
    ...(req.tools?.length ? { tools: toResponsesTools(req.tools) } : {}),
    ...(reasoningModel ? { include: ['reasoning.encrypted_content'] } : {}),
    ...(req.cacheKey ? { prompt_cache_key: req.cacheKey } : {}),
    store: false,
    stream: true,
  };
}
