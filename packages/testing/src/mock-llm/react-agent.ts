import type { MockRequest } from './types.js';

/** Is this a ReAct request (tools described in the prompt, none offered natively)? */
export const isReactRequest = (req: MockRequest) =>
  req.tools.length === 0 && req.messages.some((m) => m.role === 'system' && /Final Answer:/.test(m.content ?? ''));

/** The tool results a ReAct transcript shows the model, in order (the text inside each `<tool_result>`). */
export function reactObservations(req: MockRequest): string[] {
  const out: string[] = [];
  for (const m of req.messages) {
    if (m.role !== 'user') continue;
    for (const match of (m.content ?? '').matchAll(
      /Observation: <tool_result tool="[^"]*">\n([\s\S]*?)\n<\/tool_result>/g,
    ))
      out.push(match[1]!);
  }
  return out;
}
