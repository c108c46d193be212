import type { CapacityFigures } from './capacity.js';
import { liveHeapLines } from './capacity-heap.js';

const kb = (b: number) => `${(b / 1024).toFixed(1)} KB`;

export function capacityLines(f: CapacityFigures): string[] {
  const s = f.scheduling;
  return [
    `capacity: ${f.runs} runs at once × ${f.iterations} model calls (${f.modelMs.map((m) => m / 1000).join('–')} s each) with a 50–500 ms tool call between: ${f.completed} completed, ${f.failed} failed in ${f.seconds.toFixed(1)} s; ${f.iterationsPerS.toFixed(0)} iterations/s; orchestrator CPU ${f.orchestratorCpuS.toFixed(1)} s (${f.orchestrators} process${f.orchestrators > 1 ? 'es' : ''})`,
    ...liveHeapLines(f.live),
    `  ${f.peakRunning} running at the plateau: orchestrator heap in use (sawtooth's lower edge, garbage included) ${kb(f.heapPerActiveB)} per running run (${kb(f.heapOldPerActiveB)} without the young generation), Redis ${kb(f.redisPerActiveB)} per running run`,
    `  Redis per finished run (retained): ${kb(f.redisPerFinishedB)} (used_memory), its keys ${kb(f.finishedRunKeysB)} (MEMORY USAGE, median of 20)`,
    `  Redis per parked run (${f.parked} parked): ${kb(f.redisPerParkedB)} (used_memory), its keys ${kb(f.parkedRunKeysB)}`,
    `  a finished run's keys by its model calls: ${f.byLength.map((l) => `${l.length}: ${kb(l.bytes)}`).join(', ')}`,
    `  job ready → taken: later iterations p50 ${s.orchestrator.p50.toFixed(0)} ms, p99 ${s.orchestrator.p99.toFixed(0)} ms (${s.orchestrator.n} jobs); first iterations (all runs created at once) p50 ${s.firstIterations.p50.toFixed(0)} ms, p99 ${s.firstIterations.p99.toFixed(0)} ms (${s.firstIterations.n}); tools p50 ${s.tools.p50.toFixed(0)} ms, p99 ${s.tools.p99.toFixed(0)} ms (${s.tools.n})`,
  ];
}

export function capacityTargets(f: CapacityFigures): string[] {
  const ok = (b: boolean) => (b ? 'met' : 'MISSED');
  return [
    `  ${f.runs} concurrent runs complete                 ${f.completed}/${f.runs}  ${ok(f.completed === f.runs)}`,
    `  p99 scheduling delay (later iterations)        ${f.scheduling.orchestrator.p99.toFixed(0)} ms  (target ≤ 50 ms)  ${ok(f.scheduling.orchestrator.p99 <= 50)}`,
    `  orchestrator live heap per running run        ${kb(f.live.perRunningB)}  (target ≤ 20 KB)  ${ok(f.live.perRunningB <= 20 * 1024)}; the sawtooth's lower edge (garbage included) ${kb(f.heapPerActiveB)}, without the young generation ${kb(f.heapOldPerActiveB)}`,
    `  Redis per parked run                          ${kb(f.redisPerParkedB)}  (target ≤ 16 KB)  ${ok(f.redisPerParkedB <= 16 * 1024)}`,
  ];
}
