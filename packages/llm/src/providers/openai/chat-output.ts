import type { Message } from '@agentloop/protocol';
import type { ModelCallRequest } from '../../types.js';
import { withOutputInstruction } from '../../structured-output/instructions.js';
import { toStrictSchema } from '../../structured-output/strict-schema.js';

/**
 * A request's structured output on Chat Completions. OpenAI and compatible servers: `response_format` json_schema,
 * `strict: true` with the strict form when the schema has one (OpenAI's always has: intake refuses the others), the
 * schema as given with `strict: false` otherwise (a compatible server then treats it as guidance). DeepSeek has no
 * json_schema format: JSON mode (`json_object`) and the schema in a system message — which also carries the word
 * "json" that its JSON mode requires in the prompt.
 */
export function chatOutput(
  provider: 'openai' | 'deepseek' | 'openai-compatible',
  req: Pick<ModelCallRequest, 'output' | 'messages'>,
): { body: Record<string, unknown>; messages: readonly Message[] } {
  const output = req.output;
  if (!output) return { body: {}, messages: req.messages };
  if (provider === 'deepseek')
    return {
      body: { response_format: { type: 'json_object' } },
      messages: withOutputInstruction(req.messages, output),
    };
  const strict = toStrictSchema(output.schema);
  const json_schema = { name: output.name, schema: strict.ok ? strict.schema : output.schema, strict: strict.ok };
  return { body: { response_format: { type: 'json_schema', json_schema } }, messages: req.messages };
}
