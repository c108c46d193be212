import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = path.dirname(fileURLToPath(import.meta.url));

/** BullMQ stays in the worker shell: the deciders see an IterationDelivery (runtime), adapted in job-delivery.ts. */
describe('the loop\'s deciders depend on no queue library', () => {
  it.each(['context-gate.ts', 'start-iteration.ts'])('%s imports nothing of bullmq', (file) => {
    const imports = [...fs.readFileSync(path.join(here, file), 'utf8').matchAll(/^import [^;]*? from '([^']+)'/gms)].map((m) => m[1]);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.filter((m) => m === 'bullmq' || m!.startsWith('bullmq/'))).toEqual([]);
  });

  it('the shell\'s adapter is the one place the iteration job meets them', () => {
    const src = fs.readFileSync(path.join(here, 'job-delivery.ts'), 'utf8');
    expect(src).toContain("from 'bullmq'");
    expect(src).toMatch(/export function jobDelivery\(job: Job, token: string \| undefined, scheduler: RunScheduler\): IterationDelivery/);
  });
});
