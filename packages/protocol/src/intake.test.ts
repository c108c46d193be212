import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runRequestJob } from './intake.js';

/** The job id earlier builds gave an idempotency key (node:crypto): a retry across a deploy must land on the same job. */
const earlierJobId = (tenantId: string, key: string) =>
  `idem-${createHash('sha256')
    .update(JSON.stringify([tenantId, key]))
    .digest('base64url')}`;

describe('runRequestJob: the requests job of queue intake, built with Web Crypto', () => {
  it('derives the job id from (tenant, idempotency key) exactly as earlier builds did, whatever the characters', async () => {
    for (const [tenant, key] of [
      ['tenant-a', 'k1'],
      ['t.b@x', 'some:key/with stuff ü 🙂'],
      ['t', 'x'.repeat(255)],
    ] as const) {
      const job = await runRequestJob({ input: 'hi' } as never, { tenantId: tenant, idempotencyKey: key });
      expect(job.opts.jobId).toBe(earlierJobId(tenant, key));
      expect(job.opts.jobId).toMatch(/^idem-[A-Za-z0-9_-]{43}$/);
    }
  });

  it('carries the SPEC payload; without a key BullMQ picks the id', async () => {
    const job = await runRequestJob({ input: 'hi' } as never, { tenantId: 'tenant-a', runId: 'run-1' });
    expect(job).toEqual({
      name: 'run',
      data: { tenantId: 'tenant-a', idempotencyKey: undefined, runId: 'run-1', request: { input: 'hi' } },
      opts: { jobId: undefined, removeOnComplete: { age: 86_400 }, removeOnFail: { age: 86_400 } },
    });
  });
});
