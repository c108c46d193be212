import fs from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector/promises';

/** BENCH_CORE_PROFILE=dir: a CPU profile (main thread) of each measured 50-runs window, for Chrome DevTools or speedscope. */
const DIR = process.env.BENCH_CORE_PROFILE;
let n = 0;

/** Runs `fn` under the V8 sampling profiler when BENCH_CORE_PROFILE names a directory (the figures then carry its overhead). */
export async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
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
