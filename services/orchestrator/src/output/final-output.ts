import type { CallMode } from '@agentloop/protocol';
import type { ModelResponse } from '@agentloop/llm';
import type { RunState } from '@agentloop/runtime';
import { isFinalAnswer } from '../loop/plan-response.js';
import { outputValidator } from './isolated-validator.js';
import type { OutputCheck } from './output-validator.js';

/**
 * The check of a response's final answer against the run's `output.schema`, made before planning so that the
 * planner's input is plain data (undefined: the run has no schema, or the response is not a final answer). It runs
 * in the validator's worker thread, within its budget (isolated-validator.ts).
 */
export async function finalOutputCheck(
  st: Pick<RunState, 'request' | 'tenant'>,
  callMode: CallMode,
  res: Pick<ModelResponse, 'message'>,
): Promise<OutputCheck | undefined> {
  const schema = st.request.output?.schema;
  if (!schema || !isFinalAnswer(callMode, res)) return undefined;
  return outputValidator.check(schema, res.message.content ?? '', st.tenant);
}
