import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = path.dirname(fileURLToPath(import.meta.url));
const SHELL = ['iteration-worker.ts', 'job-delivery.ts', 'timer-jobs.ts'];
const imports = (file: string) =>
  [...fs.readFileSync(path.join(here, file), 'utf8').matchAll(/^import [^;]*? from '([^']+)'/gms)].map((m) => m[1]!);
const loopModules = fs
  .readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !SHELL.includes(f));

/** BullMQ stays in the worker shell: the iteration sees an IterationDelivery (runtime), adapted in job-delivery.ts. */
describe('the iteration depends on no queue library', () => {
  it('the loop has its modules', () =>
    expect(loopModules).toEqual(
      expect.arrayContaining(['iteration-pass.ts', 'context-gate.ts', 'dispatch-calls.ts', 'continuations.ts']),
    ));

  it.each(loopModules)('%s imports nothing of bullmq', (file) => {
    expect(imports(file).filter((m) => m === 'bullmq' || m.startsWith('bullmq/'))).toEqual([]);
  });

  it("the shell's adapter is the one place the iteration job meets it", () => {
    const src = fs.readFileSync(path.join(here, 'job-delivery.ts'), 'utf8');
    expect(src).toContain("from 'bullmq'");
    expect(src).toMatch(
      /export function jobDelivery\(job: Job, token: string \| undefined, redis: Redis, lockMs: number\): IterationDelivery/,
    );
  });

  it('the waits the iteration needs go back to the shell as commands, not through the delivery', () => {
    expect(fs.readFileSync(path.join(here, 'context-gate.ts'), 'utf8')).toContain("kind: 'wait_summary'");
    expect(fs.readFileSync(path.join(here, 'iteration-worker.ts'), 'utf8')).toMatch(
      /moveToWaitingChildren[\s\S]*moveToDelayed|moveToDelayed[\s\S]*moveToWaitingChildren/,
    );
  });
});
