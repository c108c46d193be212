import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * BENCH_CORE_CALLGRIND=dir: each loop process runs under valgrind's callgrind, uninstrumented (about ten times
 * slower) until a measured window opens; the window counts the instructions the process executes, in user space, on
 * all its threads (the JIT's and the GC's helpers included). A count does not move with what else the machine is
 * doing, where CPU time on this machine moved ±15 % from one window to the next (docs/BENCHMARKS.md): the figure to
 * decide whether a change made a loop cheaper. It misses the kernel's share (socket writes) and cache effects.
 */
export const CALLGRIND_DIR = process.env.BENCH_CORE_CALLGRIND;

/** How a loop process is started under callgrind (fork's execPath and execArgv), or null without BENCH_CORE_CALLGRIND. */
export function callgrindExec(nodeArgs: readonly string[]): { execPath: string; execArgv: string[] } | null {
  if (!CALLGRIND_DIR) return null;
  fs.mkdirSync(CALLGRIND_DIR, { recursive: true });
  return {
    execPath: 'valgrind',
    execArgv: [
      '--tool=callgrind',
      '--instr-atstart=no',
      '--smc-check=all-non-file',
      '--quiet',
      `--callgrind-out-file=${path.join(CALLGRIND_DIR, 'callgrind.out.%p')}`,
      process.execPath,
      ...nodeArgs,
    ],
  };
}

// (a process vgdb cannot reach — ptrace refused — fails the window within 30 s, with callgrind_control's own words)
const control = (...args: string[]) =>
  execFileSync('callgrind_control', [...args, String(process.pid)], {
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 30_000,
  });

/**
 * Counts the instructions `fn` executes in this process (it runs under callgrind: BENCH_CORE_CALLGRIND); without
 * callgrind, runs it and answers null.
 */
export async function countInstructions<T>(fn: () => Promise<T>): Promise<{ result: T; instructions: number | null }> {
  if (!CALLGRIND_DIR || !process.env.BENCH_CALLGRIND_CHILD) return { result: await fn(), instructions: null };
  control('-i', 'on');
  control('-z');
  let result: T;
  let file: string | undefined;
  try {
    result = await fn();
    const before = new Set(dumps());
    control('-d'); // (while instrumented: a dump after `-i off` counts nothing)
    file = dumps().find((f) => !before.has(f));
  } finally {
    control('-i', 'off'); // a window that failed leaves the process running at its uninstrumented speed
  }
  if (!file) throw new Error('callgrind wrote no dump for the window');
  const summary = /^(?:summary|totals): (\d+)/m.exec(fs.readFileSync(file, 'utf8'));
  fs.rmSync(file);
  if (!summary) throw new Error(`callgrind's dump ${file} holds no total`);
  return { result, instructions: Number(summary[1]) };
}

const dumps = () =>
  fs
    .readdirSync(CALLGRIND_DIR!)
    .filter((f) => f.startsWith(`callgrind.out.${process.pid}.`))
    .map((f) => path.join(CALLGRIND_DIR!, f));
