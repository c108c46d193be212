import type { ModelResponse } from '../../types.js';

export function mapOpenAIFinishReason(
  reason: string | null | undefined,
  hasToolCalls: boolean,
): ModelResponse['finishReason'] {
  switch (reason) {
    case 'stop':
      return hasToolCalls ? 'tool_calls' : 'stop';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content_filter';
    default:
      return hasToolCalls ? 'tool_calls' : 'other';
  }
}
