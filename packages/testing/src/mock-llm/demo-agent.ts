import type { MockRequest, ReplySpec, Script } from './types.js';

/** How many tool-calling steps the conversation already holds (0 on the first call of a run). */
export const stepOf = (req: MockRequest) =>
  req.messages.filter((m) => m.role === 'assistant' && m.toolCalls?.length).length;

/** The tool result contents of the given step, in call order. */
export function stepResults(req: MockRequest, step: number): string[] {
  const a = req.messages.filter((m) => m.role === 'assistant' && m.toolCalls?.length)[step];
  if (!a) return [];
  return a.toolCalls!.map((c) => req.messages.find((m) => m.role === 'tool' && m.toolCallId === c.id)?.content ?? '');
}

const field = (content: string, key: string): unknown => {
  try {
    return (JSON.parse(content) as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
};

/**
 * A deterministic "agent" model for the demo and end-to-end tests: two parallel calculator calls, then
 * current_time, then an answer built from the tool results it received (so a wrong transcript shows).
 */
export function demoAgentScript(opts: { delayMs?: number } = {}): Script {
  return (req): ReplySpec => {
    if (!req.tools.length)
      return {
        text: 'I can only answer from what I have: no tools were available.',
        chunking: 'fine',
        delayMs: opts.delayMs,
      };
    switch (stepOf(req)) {
      case 0:
        return {
          text: 'Let me compute both expressions.',
          toolCalls: [
            { name: 'calculator', args: { expression: '17*23' } },
            { name: 'calculator', args: { expression: '(2+3)*4' } },
          ],
          chunking: 'interleaved',
        };
      case 1:
        return { toolCalls: [{ name: 'current_time', args: { timezone: 'Asia/Tokyo' } }] };
      default: {
        const [a, b] = stepResults(req, 0).map((c) => field(c, 'value'));
        const [t] = stepResults(req, 1).map((c) => field(c, 'iso'));
        return {
          text: `17 × 23 = ${a}, and (2 + 3) × 4 = ${b}. In Tokyo it is now ${t}.`,
          chunking: 'fine',
          delayMs: opts.delayMs,
        };
      }
    }
  };
}
