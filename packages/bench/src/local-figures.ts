import type { CoreFigures, LoopFigures, Measured } from './core-figures.js';

/** Issue 26's comparison: the product with its tool local vs pooled vs the raw loop with the tool inline vs the Agents SDK. */
const ROWS = [
  ['local', 'agentloop, tool local'],
  ['product', 'agentloop, tool pooled'],
  ['inline', 'raw loop, tool inline'],
  ['sdk', 'OpenAI Agents SDK'],
] as const;

const iterPerSec = (m: Measured) => m.iterations / m.seconds;
const cpuPerIter = (m: Measured) => m.cpuMs / m.iterations;
/** One run at a time: the wall time of an iteration (its model call and tool included). */
const msPerIter = (m: Measured) => (m.seconds * 1000) / m.iterations;
const cmdsPerIter = (m: Measured) => m.commands / m.iterations;
const has = (f: LoopFigures) => f.loaded.iterations > 0;

export function localToolLines(c: CoreFigures): string[] {
  const rows = ROWS.filter(([k]) => has(c[k]));
  if (!rows.length) return [];
  const f2 = (n: number) => n.toFixed(2);
  return [
    `local tools (issue 26), ${c.provider}: the same workload, ${c.local.loaded.iterations || c.sdk.loaded.iterations} iterations at 50 runs in flight, ${c.local.sequential.iterations || c.sdk.sequential.iterations} one run at a time`,
    `  ${''.padEnd(24)} ${'iterations/s'.padStart(12)} ${'CPU ms / iter'.padStart(14)} ${'ms / iter, 1×'.padStart(14)} ${'Redis cmds / iter'.padStart(17)} ${'cmds / iter, 1×'.padStart(16)}`,
    ...rows.map(([k, name]) => {
      const { loaded, sequential } = c[k];
      return `  ${name.padEnd(24)} ${iterPerSec(loaded).toFixed(0).padStart(12)} ${f2(cpuPerIter(loaded)).padStart(14)} ${f2(msPerIter(sequential)).padStart(14)} ${cmdsPerIter(loaded).toFixed(1).padStart(17)} ${cmdsPerIter(sequential).toFixed(1).padStart(16)}`;
    }),
  ];
}

/** The targets of issue 26, met or MISSED (each needs the tool-local product and its peer). */
export function localToolTargetLines(c: CoreFigures): string[] {
  const line = (what: string, v: number, target: string, met: boolean) =>
    `  ${what.padEnd(64)} ${v.toFixed(2)}×  (target ${target})  ${met ? 'met' : 'MISSED'}`;
  if (!has(c.local)) return [];
  const out: string[] = [];
  if (has(c.sdk)) {
    const tput = iterPerSec(c.local.loaded) / iterPerSec(c.sdk.loaded);
    const latency = msPerIter(c.local.sequential) / msPerIter(c.sdk.sequential);
    out.push(line(`tool local: iterations/s at 50 runs vs the Agents SDK`, tput, '≥ 1.2×', tput >= 1.2));
    out.push(line(`tool local: ms / iteration one at a time vs the Agents SDK`, latency, '≤ 1.2×', latency <= 1.2));
  }
  if (has(c.inline)) {
    const cmds = cmdsPerIter(c.local.loaded) / cmdsPerIter(c.inline.loaded);
    out.push(line(`tool local: Redis commands / iteration vs raw loop, tool inline`, cmds, '≤ 1.2×', cmds <= 1.2));
  }
  return out;
}
