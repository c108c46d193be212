import type { ToolDefinition } from '../tool-definition.js';

export function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason ?? new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export const sleep: ToolDefinition = {
  name: 'sleep',
  description: 'Wait for the given number of milliseconds (honours cancellation).',
  parameters: {
    type: 'object',
    properties: { ms: { type: 'integer', minimum: 0, maximum: 3_600_000 } },
    required: ['ms'],
    additionalProperties: false,
  },
  sideEffect: 'read',
  pool: 'default',
  timeoutMs: 3_600_000,
  async execute(args, ctx) {
    const ms = (args as { ms: number }).ms;
    await sleepFor(ms, ctx.signal);
    return { slept: ms };
  },
};
