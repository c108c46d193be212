import type { Message } from '@agentloop/protocol';
import type { ModelCallRequest } from '../types.js';

type Output = NonNullable<ModelCallRequest['output']>;

/** The final answer's format in words, for models that take no schema natively (and for DeepSeek's JSON mode). */
export function outputInstruction(output: Output): string {
  return [
    `Answer in json: your final answer (the reply in which you call no tool) must be only a JSON value that matches the`,
    `JSON Schema "${output.name}" below — no prose before or after it, no code fence. Tool calls are made as usual until then.`,
    '',
    JSON.stringify(output.schema),
  ].join('\n');
}

/** The transcript with the output instruction as a system message after the leading system messages. */
export function withOutputInstruction(messages: readonly Message[], output: Output): Message[] {
  let at = 0;
  while (at < messages.length && messages[at]!.role === 'system') at++;
  return [...messages.slice(0, at), { role: 'system', content: outputInstruction(output) }, ...messages.slice(at)];
}
