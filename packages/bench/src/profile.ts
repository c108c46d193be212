import fs from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector/promises';

/** BENCH_CORE_PROFILE=dir: a CPU profile (main thread) of each measured 50-runs window, for Chrome DevTools or speedscope. */
const DIR = process.env.BENCH_CORE_PROFILE;
let n = 0;

/** BENCH_CORE_HEAP_PROFILE=dir: a sampling allocation profile of each measured 50-runs window (which code allocates). */
const HEAP_DIR = process.env.BENCH_CORE_HEAP_PROFILE;

/** Runs `fn` under V8's sampling heap profiler (what each function allocates; GC helpers' work follows it). */
async function heapProfiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  // the collected objects too: what a window allocated, not what is left of it
  await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    fs.mkdirSync(HEAP_DIR!, { recursive: true });
    const file = path.join(HEAP_DIR!, `${name.replace(/[^\w-]+/g, '-').replace(/^-|-$/g, '')}-${++n}.heapprofile`);
    fs.writeFileSync(file, JSON.stringify(profile));
    console.log(`  heap profile: ${file}`);
    session.disconnect();
  }
}

/** Runs `fn` under the V8 sampling profiler when BENCH_CORE_PROFILE names a directory (the figures then carry its overhead). */
export async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  if (HEAP_DIR) return heapProfiled(name, fn);
  if (!DIR) return fn();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 250 });
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    fs.mkdirSync(DIR, { recursive: true });
    const file = path.join(DIR, `${name.replace(/[^\w-]+/g, '-').replace(/^-|-$/g, '')}-${++n}.cpuprofile`);
    fs.writeFileSync(file, JSON.stringify(profile));
    console.log(`  CPU profile: ${file}`);
    session.disconnect();
  }
}
