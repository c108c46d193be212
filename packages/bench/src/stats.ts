import type { Redis } from 'ioredis';

export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Total commands Redis executed (INFO commandstats; commands run inside Lua scripts included), minus our own probes. */
export async function commandCount(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    if (!['info', 'config|resetstat', 'config'].includes(m[1]!)) total += Number(m[2]);
  return total;
}

/** BENCH_CORE_COMMANDS: each command's calls per iteration (commands run inside Lua scripts included), most first. */
export async function commandsByName(admin: Redis, iterations: number): Promise<string> {
  const info = await admin.info('commandstats');
  const rows = [...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].filter(
    (m) => !['info', 'config|resetstat', 'config'].includes(m[1]!),
  );
  return rows
    .map((m) => [m[1]!, Number(m[2]) / iterations] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([n, c]) => `${n} ${c.toFixed(2)}`)
    .join(', ');
}

export const ms = (s: number) => `${(s * 1000).toFixed(2)} ms`;
