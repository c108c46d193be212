import fs from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector/promises';

/** BENCH_CORE_PROFILE=dir: a CPU profile (main thread) of each measured 50-runs window, for Chrome DevTools or speedscope. */
const CPU_DIR = process.env.BENCH_CORE_PROFILE;
/** BENCH_CORE_HEAP_PROFILE=dir: a sampling allocation profile of each measured 50-runs window (which code allocates). */
const HEAP_DIR = process.env.BENCH_CORE_HEAP_PROFILE;
/**
 * BENCH_CORE_MARKS=file: each measured 50-runs window: its process id and CLOCK_MONOTONIC start and end (seconds), one line per window,
 * to cut an outside CPU profile (`perf record -k CLOCK_MONOTONIC`, then `perf script --time start,end`) into loops.
 */
const MARKS = process.env.BENCH_CORE_MARKS;
let n = 0;

interface Profiler {
  dir: string;
  ext: 'cpuprofile' | 'heapprofile';
  start(session: Session): Promise<unknown>;
  stop(session: Session): Promise<unknown>;
}

const CPU = (dir: string): Profiler => ({
  dir,
  ext: 'cpuprofile',
  async start(s) {
    await s.post('Profiler.enable');
    await s.post('Profiler.setSamplingInterval', { interval: 250 });
    await s.post('Profiler.start');
  },
  stop: async (s) => (await s.post('Profiler.stop')).profile,
});

const HEAP = (dir: string): Profiler => ({
  dir,
  ext: 'heapprofile',
  async start(s) {
    await s.post('HeapProfiler.enable');
    // the collected objects too: what a window allocated, not what is left of it
    await s.post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  },
  stop: async (s) => (await s.post('HeapProfiler.stopSampling')).profile,
});

/**
 * Runs `fn` under V8's sampling CPU profiler (BENCH_CORE_PROFILE) or its sampling heap profiler
 * (BENCH_CORE_HEAP_PROFILE), writing one file per call, and marks its window (BENCH_CORE_MARKS); otherwise just runs it. The figures then carry the
 * profiler's overhead.
 */
export async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  if (MARKS) {
    const seconds = () => (Number(process.hrtime.bigint() / 1000n) / 1e6).toFixed(6);
    const start = seconds();
    try {
      return await inProfiler(name, fn);
    } finally {
      fs.appendFileSync(MARKS, `${name} ${process.pid} ${start} ${seconds()}\n`);
    }
  }
  return inProfiler(name, fn);
}

async function inProfiler<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const profiler = HEAP_DIR ? HEAP(HEAP_DIR) : CPU_DIR ? CPU(CPU_DIR) : null;
  if (!profiler) return fn();
  const session = new Session();
  session.connect();
  await profiler.start(session);
  try {
    return await fn();
  } finally {
    const profile = await profiler.stop(session);
    fs.mkdirSync(profiler.dir, { recursive: true });
    const file = path.join(
      profiler.dir,
      `${name.replace(/[^\w-]+/g, '-').replace(/^-|-$/g, '')}-${++n}.${profiler.ext}`,
    );
    fs.writeFileSync(file, JSON.stringify(profile));
    console.log(`  ${profiler.ext}: ${file}`);
    session.disconnect();
  }
}
