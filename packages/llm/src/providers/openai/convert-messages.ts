import type { Message } from '@agentloop/protocol';
import type OpenAI from 'openai';
import type { ToolSpec } from '../../types.js';

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

export interface ConvertOptions {
  /** DeepSeek thinking mode: send `reasoning_content` back on assistant messages. */
  sendReasoning: boolean;
}

/** Canonical transcript → OpenAI Chat Completions messages. */
export function toOpenAIMessages(messages: readonly Message[], opts: ConvertOptions): ChatMessage[] {
  return messages.map((m): ChatMessage => {
    switch (m.role) {
      case 'system':
        return { role: 'system', content: m.content ?? '' };
      case 'user':
        return { role: 'user', content: m.content ?? '' };
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId ?? '', content: m.content ?? '' };
      case 'assistant': {
        const out: ChatMessage & Record<string, unknown> = { role: 'assistant', content: m.content ?? null };
        if (m.toolCalls?.length)
          out.tool_calls = m.toolCalls.map((c) => ({
            id: c.id,
            type: 'function' as const,
            function: { name: c.name, arguments: c.arguments },
          }));
        // DeepSeek thinking mode needs reasoning_content back on assistant messages with tool calls — also on turns
        // another provider produced after a fallback (they have none: an empty one keeps the request valid)
        if (opts.sendReasoning && (m.reasoning !== undefined || m.toolCalls?.length))
          out.reasoning_content = m.reasoning ?? '';
        return out;
      }
    }
  });
}

export function toOpenAITools(tools: readonly ToolSpec[]): OpenAI.Chat.Completions.ChatCompletionTool[] {
  return tools.map((t) => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}
