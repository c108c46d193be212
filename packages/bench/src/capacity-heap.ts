import path from 'node:path';
import type { Inspector, LiveHeap } from './inspector.js';

/** What was in flight around one reading of the live heap. */
export interface InFlight {
  /** Runs in the tenant's running index. */
  running: number;
  /** Jobs active in the orchestrator queue (iterations in this process: model calls, mostly). */
  jobs: number;
}

export interface LiveSample extends LiveHeap, InFlight {
  /** Seconds since the load started. */
  at: number;
}

export interface LiveHeapFigures {
  /** Live heap of the orchestrator idle: fresh (nothing run yet), after the warm-up runs (the baseline), after the load. */
  freshB: number;
  idleB: number;
  afterB: number;
  warmup: number;
  /** The readings at the plateau (at least 90% of the most runs running). */
  plateau: LiveSample[];
  /** (live at the plateau − live idle after the warm-up) / runs running, median of the plateau's readings, and their range. */
  perRunningB: number;
  perRunningMinB: number;
  perRunningMaxB: number;
  /** The same over the idle heap after the load (a second baseline: more code optimized, the pool's idle sockets). */
  perRunningAfterB: number;
  /** (live at the plateau − live idle) / orchestrator jobs in flight, median. */
  perJobB: number;
  /** The longest pause of one reading (two full collections), ms. */
  maxPauseMs: number;
  /** process.getActiveResourcesInfo() by kind: idle after the warm-up, at the fullest reading, after the load. */
  resources: { idle: Record<string, number>; plateau: Record<string, number>; after: Record<string, number> };
}

/**
 * Readings of the orchestrator's live heap during a load: each a full collection over its inspector, then the heap
 * in use. At most one every `everyMs`, nor sooner than four times the last one's pause after it (the process stands
 * still at most a fifth of the time: 0.3 s every 2 s at 1,000 runs, 2 s every 8 s at 10,000), and only while the
 * runs running are at least 90% of the most seen so far (the ramp's readings are dropped at the end anyway). `snapshotDir`: heap snapshots at the idle baseline, at the
 * first reading with 90% of `runs` running, and after the load (BENCH_CAPACITY_SNAPSHOTS).
 */
export function liveHeapProbe(
  insp: Inspector,
  inFlight: () => Promise<InFlight>,
  o: { runs: number; everyMs: number; snapshotDir?: string },
) {
  const samples: LiveSample[] = [];
  let top = 0;
  let last = -Infinity;
  let gap = o.everyMs;
  let t0 = 0;
  let snapshotTaken = false;
  /** BENCH_CAPACITY_SNAPSHOT_AT=s1,s2…: plateau snapshots at the first readings at or after these seconds instead. */
  const snapshotAt = (process.env.BENCH_CAPACITY_SNAPSHOT_AT ?? '').split(',').filter(Boolean).map(Number);
  let plateauResources: Record<string, number> = {};
  /** Sawtooth samples right after a forced collection would read as live: the ones within 1.5 s of one are left out. */
  let lastForcedAt = -Infinity;
  return {
    start: () => void (t0 = performance.now()),
    /** Whether a metrics sample taken now is clear of the forced collections. */
    clear: () => performance.now() - lastForcedAt > 1500,
    /** Called with each sampler tick's running count: takes a reading when one is due. */
    async tick(running: number): Promise<void> {
      top = Math.max(top, running);
      if (running < 0.9 * top || performance.now() - last < gap) return;
      const before = await inFlight();
      const heap = await insp.liveHeap();
      const after = await inFlight();
      last = lastForcedAt = performance.now();
      gap = Math.max(o.everyMs, 4 * heap.pauseMs);
      const sample = {
        ...heap,
        running: (before.running + after.running) / 2,
        jobs: (before.jobs + after.jobs) / 2,
        at: (last - t0) / 1000,
      };
      samples.push(sample);
      if (sample.running >= Math.max(...samples.map((s) => s.running))) plateauResources = await insp.resources();
      const due = snapshotAt.length
        ? snapshotAt.findIndex((at) => sample.at >= at)
        : !snapshotTaken && sample.running >= 0.9 * o.runs
          ? 0
          : -1;
      if (o.snapshotDir && due >= 0) {
        snapshotTaken = true;
        await insp.snapshot(
          path.join(
            o.snapshotDir,
            snapshotAt.length ? `plateau-${snapshotAt[due]}.heapsnapshot` : 'plateau.heapsnapshot',
          ),
        );
        snapshotAt.splice(due, 1);
        lastForcedAt = performance.now();
      }
    },
    figures(base: {
      freshB: number;
      idleB: number;
      afterB: number;
      warmup: number;
      idleResources: Record<string, number>;
      afterResources: Record<string, number>;
    }): LiveHeapFigures {
      const most = Math.max(0, ...samples.map((s) => s.running));
      const plateau = samples.filter((s) => s.running >= 0.9 * most && s.running > 0);
      const per = (b: number, of: (s: LiveSample) => number) => plateau.map((s) => (s.usedB - b) / Math.max(1, of(s)));
      const perRunning = per(base.idleB, (s) => s.running);
      return {
        freshB: base.freshB,
        idleB: base.idleB,
        afterB: base.afterB,
        warmup: base.warmup,
        plateau,
        perRunningB: median(perRunning),
        perRunningMinB: Math.min(...perRunning),
        perRunningMaxB: Math.max(...perRunning),
        perRunningAfterB: median(per(base.afterB, (s) => s.running)),
        perJobB: median(per(base.idleB, (s) => s.jobs)),
        maxPauseMs: Math.max(0, ...samples.map((s) => s.pauseMs)),
        resources: { idle: base.idleResources, plateau: plateauResources, after: base.afterResources },
      };
    },
  };
}

/** The median (the mean of the middle two of an even count). */
function median(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length === 0 ? NaN : v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

const kb = (b: number) => `${(b / 1024).toFixed(1)} KB`;
const mb = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MB`;
const handles = (r: Record<string, number>) => `${r.TCPSocketWrap ?? 0} sockets, ${r.Timeout ?? 0} timers`;

export function liveHeapLines(f: LiveHeapFigures): string[] {
  return [
    `  orchestrator live heap (full collection over the inspector before each reading): idle ${mb(f.idleB)} after a warm-up load of ${f.warmup} runs (fresh ${mb(f.freshB)}, after the load ${mb(f.afterB)})`,
    `    at the plateau: ${f.plateau.map((s) => `${mb(s.usedB)} with ${s.running.toFixed(0)} running / ${s.jobs.toFixed(0)} jobs at ${s.at.toFixed(0)} s (${mb(s.beforeB)} before the collection, ${s.pauseMs.toFixed(0)} ms)`).join('; ')}`,
    `    live heap per running run ${kb(f.perRunningB)} (median of ${f.plateau.length}; ${kb(f.perRunningMinB)}–${kb(f.perRunningMaxB)}) over the idle heap after the warm-up; ${kb(f.perRunningAfterB)} over the idle heap after the load; ${kb(f.perJobB)} per orchestrator job in flight`,
    `    handles: idle ${handles(f.resources.idle)}; fullest reading ${handles(f.resources.plateau)}; after the load ${handles(f.resources.after)}`,
  ];
}
