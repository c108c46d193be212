import fs from 'node:fs';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { profiled } from './profile.js';
import { countInstructions } from './callgrind.js';

/** A bench loop: runs one run at a time per caller, counting the iterations it made. */
export interface Loop {
  iterations: number;
  run(): Promise<void>;
}

/** What a window costs the process that ran it: wall time and CPU (all its threads, main thread, kernel). */
export interface WindowCpu {
  iterations: number;
  seconds: number;
  cpuMs: number;
  /** Of cpuMs, the main thread's (the rest: GC helper and compiler threads, libuv's pool, the inspector). */
  mainThreadMs: number;
  /** Of cpuMs, the kernel's (system time: socket writes and reads, epoll). */
  systemMs: number;
  /** Instructions the process executed in user space (BENCH_CORE_CALLGRIND; 0 without it). */
  instructions: number;
}

const STALL_MS = 30_000;
const SETTLE_MS = 50;

/**
 * `runs` runs, `parallel` in flight: each lane starts its next run when its previous one answered. Fails when no
 * iteration made progress for 30 s (a run that never answers would otherwise hang the bench).
 */
export async function lanes(loop: Loop, runs: number, parallel: number, name: string): Promise<void> {
  let next = 0;
  let answered = 0;
  let seen = loop.iterations;
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      if (loop.iterations === seen)
        reject(new Error(`${name}: no iteration for ${STALL_MS / 1000} s, ${answered} of ${runs} runs answered`));
      seen = loop.iterations;
    }, STALL_MS);
  });
  try {
    await Promise.race([
      stalled,
      Promise.all(
        Array.from({ length: Math.min(parallel, runs) }, async () => {
          while (next++ < runs) {
            await loop.run();
            answered++;
          }
        }),
      ),
    ]);
  } finally {
    clearInterval(timer);
  }
}

const CLOCK_TICK_MS = 10; // USER_HZ = 100 on Linux
/** CPU of this process's main thread so far, in ms (Linux /proc; 0 elsewhere). */
function mainThreadCpuMs(): number {
  try {
    const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * CLOCK_TICK_MS;
  } catch {
    return 0;
  }
}

let fullGc: (() => void) | null = null;
/**
 * GC-fair windows, for loops that share one process (BENCH_CORE_SHARED=1): each window starts on a collected heap and
 * ends with a full collection, so a loop pays for collecting its own garbage and none for the garbage of the loop
 * measured before it. A loop in a process of its own needs none of that, and a forced collection throws compiled
 * code away (every window then compiled again: a third more CPU per iteration, measured; docs/BENCHMARKS.md).
 */
export function gcFairWindows(): void {
  v8.setFlagsFromString('--expose-gc');
  fullGc = runInNewContext('gc') as () => void;
}

/** BENCH_CORE_PROFILE_SOLO=1: the one-run-at-a-time windows are profiled too (else only the 50-runs ones). */
const PROFILE_SOLO = process.env.BENCH_CORE_PROFILE_SOLO === '1';

/** A warm-up's window: nothing counted. */
const uncounted = async (fn: () => Promise<void>) => ({ result: await fn(), instructions: null });

/**
 * One workload's window, measured in the process that runs the loop. `arm` runs just before the window opens (the
 * caller resets Redis' counters there); `profile`: under BENCH_CORE_PROFILE / BENCH_CORE_HEAP_PROFILE /
 * BENCH_CORE_CALLGRIND (not a warm-up).
 */
export async function measureWindow(
  loop: Loop,
  runs: number,
  parallel: number,
  name: string,
  arm: () => Promise<void>,
  profile = true,
): Promise<WindowCpu> {
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  fullGc?.();
  await arm();
  const i0 = loop.iterations;
  const c0 = process.cpuUsage();
  const m0 = mainThreadCpuMs();
  const t0 = performance.now();
  let seconds = 0;
  const { instructions } = await (profile ? countInstructions : uncounted)(async () => {
    await ((parallel > 1 || PROFILE_SOLO) && profile
      ? profiled(name, () => lanes(loop, runs, parallel, name))
      : lanes(loop, runs, parallel, name));
    seconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, SETTLE_MS)); // the last jobs' completion belongs to the window
  });
  fullGc?.();
  const c = process.cpuUsage(c0);
  return {
    iterations: loop.iterations - i0,
    seconds,
    cpuMs: (c.user + c.system) / 1000,
    mainThreadMs: mainThreadCpuMs() - m0,
    systemMs: c.system / 1000,
    instructions: instructions ?? 0,
  };
}
