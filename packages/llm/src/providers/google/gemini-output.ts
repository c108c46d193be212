import type { Message } from '@agentloop/protocol';
import type { ModelCallRequest } from '../../types.js';
import { withOutputInstruction } from '../../structured-output/instructions.js';
import { modelProfile } from '../../model-profiles.js';

/**
 * Gemini 3 and later take `responseJsonSchema` together with function declarations; Gemini 1.x and 2.x answer 400
 * ("Function calling with a response mime type: 'application/json' is unsupported"). Names this build does not
 * know as 3+ are treated like 2.x: a schema left out is asked for in words, a 400 would fail the call.
 */
export const geminiSchemaWithTools = (model: string): boolean => modelProfile('google', model).profile.gemini3 === true;

/**
 * A request's structured output as Gemini takes it: `responseMimeType: application/json` + `responseJsonSchema`
 * where the model accepts them with this call's tools; otherwise (a Gemini 2.x call with tools) the schema goes into
 * the system instruction, so the final answer is still asked for in that form.
 */
export function geminiOutput(req: Pick<ModelCallRequest, 'model' | 'tools' | 'output' | 'messages'>): {
  config: Record<string, unknown>;
  messages: readonly Message[];
} {
  if (!req.output) return { config: {}, messages: req.messages };
  if (!req.tools?.length || geminiSchemaWithTools(req.model.name))
    return {
      config: { responseMimeType: 'application/json', responseJsonSchema: req.output.schema },
      messages: req.messages,
    };
  return { config: {}, messages: withOutputInstruction(req.messages, req.output) };
}
