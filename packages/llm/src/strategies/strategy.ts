import { newCallId, type ToolCall } from '@agentloop/protocol';
import type { ModelCallRequest, ModelResponse } from '../types.js';
import { ReactStreamParser } from './react/parser.js';
import { actionArguments } from './react/action-input.js';
import { REACT_STOP, renderReactTranscript } from './react/render.js';

export type StrategyName = 'function_calling' | 'react';

/** One model call seen through a strategy: what to send, and how to read what came back. */
export interface StrategyCall {
  /** The provider-level request (messages and tools in the form this strategy uses). */
  readonly request: ModelCallRequest;
  /** The provider's response → the canonical assistant message (text and tool calls). */
  finish(res: ModelResponse): ModelResponse;
}

/**
 * How a run talks to its model about tools. The transcript stays canonical either way: a strategy turns
 * transcript + tools into a model request, and the model's response into text / tool calls.
 */
export interface Strategy {
  readonly name: StrategyName;
  /** Starts one attempt (a retried or fallen-back attempt starts afresh). */
  begin(req: ModelCallRequest): StrategyCall;
}

/** Native tool calling: the provider adapters already speak canonical messages and tools. */
export const functionCalling: Strategy = {
  name: 'function_calling',
  begin: (req) => ({ request: req, finish: (res) => res }),
};

/**
 * ReAct for models without native tool calls: tools are described in the system prompt, the transcript is rendered
 * as Action / Observation turns, and the reply is parsed as it streams — thoughts as reasoning deltas, the final
 * answer as text deltas. An action becomes a canonical tool call, so orchestration, approvals and compression
 * are the same as for native runs.
 */
export const react: Strategy = {
  name: 'react',
  begin(req) {
    const parser = new ReactStreamParser({
      reasoning: (t) => req.onReasoningDelta?.(t),
      answer: (t) => req.onTextDelta?.(t),
    });
    // structured output: the schema is in the Final Answer instructions (a native JSON format would forbid the
    // Thought / Action text itself), and the final answer's text is the JSON
    const { output, ...rest } = req;
    const request: ModelCallRequest = {
      ...rest,
      messages: renderReactTranscript(req.messages, req.tools, output),
      tools: null,
      stop: [...REACT_STOP, ...(req.stop ?? [])],
      onTextDelta: (t) => parser.push(t),
      // a provider's own reasoning channel (DeepSeek thinking, Gemini thoughts) passes through
      onReasoningDelta: req.onReasoningDelta,
    };
    return {
      request,
      finish(res) {
        const step = parser.end();
        const providerReasoning = res.message.reasoning ?? '';
        const reasoning = [providerReasoning, step.reasoning].filter(Boolean).join('\n\n');
        const message: ModelResponse['message'] = { role: 'assistant', content: null };
        if (res.message.providerData) message.providerData = res.message.providerData;
        if (step.kind === 'action' && req.tools?.length) {
          const tool = req.tools.find((t) => t.name === step.name);
          const call: ToolCall = { id: newCallId(), name: step.name, arguments: actionArguments(step.input, tool) };
          message.toolCalls = [call];
          if (reasoning) message.reasoning = reasoning;
          return { ...res, message, finishReason: 'tool_calls' };
        }
        if (step.kind === 'action') {
          // no tools were offered (a final call) but the model still asked for one: what it wrote is the answer
          message.content = parser.visibleText();
          req.onTextDelta?.(message.content);
        } else message.content = step.answer;
        if (reasoning) message.reasoning = reasoning;
        return { ...res, message, finishReason: res.finishReason === 'tool_calls' ? 'stop' : res.finishReason };
      },
    };
  },
};

export function strategyFor(name: StrategyName | undefined): Strategy {
  return name === 'react' ? react : functionCalling;
}
