import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CALLGRIND_JS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../dist/callgrind.js');
const hasValgrind = spawnSync('valgrind', ['--version']).status === 0;
if (!hasValgrind) console.warn('callgrind.test: valgrind is not installed here; the instruction counts are not tested');

// BENCH_CORE_CALLGRIND: a window's instructions, counted by callgrind in the process that runs it, the rest of the
// process uncounted. The counts must grow with the work and not with the time the work waited.
describe.skipIf(!hasValgrind)('instruction counts under callgrind', () => {
  it('counts what a window executes, not what ran before it or the time it waited', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-'));
    try {
      const script = `
        import { countInstructions } from ${JSON.stringify(CALLGRIND_JS)};
        const spin = (n) => { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i); return s; };
        spin(5e6); // before any window: not counted
        // the least of a few windows: a window may also count a one-off of V8 on another thread (a compile of spin
        // finishing late, a GC), which under load can outweigh a small window's own work
        const least = async (n, fn) => { let m = Infinity; for (let i = 0; i < n; i++) m = Math.min(m, (await countInstructions(fn)).instructions); return m; };
        const small = await least(3, async () => spin(1e6));
        const idle = await least(2, () => new Promise((r) => setTimeout(r, 1500)));
        const big = await least(2, async () => spin(8e6));
        console.log(JSON.stringify([small, idle, big]));`;
      const out = execFileSync(
        'valgrind',
        [
          '--tool=callgrind',
          '--instr-atstart=no',
          '--quiet',
          `--callgrind-out-file=${dir}/callgrind.out.%p`,
          process.execPath,
          '--input-type=module',
          '-e',
          script,
        ],
        {
          env: { ...process.env, BENCH_CORE_CALLGRIND: dir, BENCH_CALLGRIND_CHILD: '1' },
          encoding: 'utf8',
          timeout: 120_000,
        },
      );
      const [small, idle, big] = JSON.parse(out.trim().split('\n').at(-1)!) as number[];
      expect(small).toBeGreaterThan(1e6);
      expect(big).toBeGreaterThan(small! * 5);
      console.log(`callgrind.test: instructions of a small window ${small}, an idle one ${idle}, a big one ${big}`);
      expect(idle).toBeLessThan(small! / 2); // 1.5 s of waiting (timers, GC helpers) costs far less than a million square roots
      expect(fs.readdirSync(dir).filter((f) => /^callgrind\.out\.\d+\.\d+$/.test(f))).toEqual([]); // each window's dump was read and removed
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});
