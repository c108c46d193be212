import { describe, expect, it } from 'vitest';
import { DeploymentKeys, RUN_SCRIPT_KEYS, RUN_STATUS_SCRIPT_KEYS } from './keys.js';

describe('DeploymentKeys.run', () => {
  it('builds a run’s keys once and names them the same every time', () => {
    const keys = new DeploymentKeys('p');
    const a = keys.run('run_abc');
    expect(keys.run('run_abc')).toBe(a);
    expect(a).toMatchObject({
      state: 'p:run:{run_abc}',
      messages: 'p:run:{run_abc}:msgs',
      eventsChannel: 'p:run:{run_abc}:ev',
    });
    const long = 'x'.repeat(65); // not kept: a request path may name any id
    expect(keys.run(long)).not.toBe(keys.run(long));
    expect(keys.run(long).state).toBe(`p:run:{${long}}`);
  });
});

describe('the keys of a run script (every key it touches, in the order lua/common.lua names them)', () => {
  it("names the run's keys, then the deployment's indexes; a status change adds the tenant's indexes and the idempotency key", () => {
    const keys = new DeploymentKeys('p');
    const run = keys.runScript('run_a');
    expect(run).toEqual([
      'p:run:{run_a}',
      'p:run:{run_a}:msgs',
      'p:run:{run_a}:compressions',
      'p:run:{run_a}:webhooks',
      'p:parked',
      'p:resuming',
      'p:queued',
      'p:running',
      'p:retention',
      'p:outbox',
    ]);
    expect(run).toHaveLength(RUN_SCRIPT_KEYS);
    const status = keys.runStatusScript('run_a', 'T', 'p:idem:T:k1');
    expect(status).toHaveLength(RUN_STATUS_SCRIPT_KEYS);
    expect(status.slice(0, RUN_SCRIPT_KEYS)).toEqual(run);
    expect(status.slice(RUN_SCRIPT_KEYS)).toEqual([
      'p:tenant:T:runs',
      'p:tenant:T:runs:queued',
      'p:tenant:T:runs:running',
      'p:tenant:T:runs:paused',
      'p:tenant:T:runs:completed',
      'p:tenant:T:runs:failed',
      'p:tenant:T:runs:cancelled',
      'p:idem:T:k1',
    ]);
    // a run without an idempotency key: a placeholder of the run's own, never touched
    expect(keys.runStatusScript('run_a', 'T', '').at(-1)).toBe('p:run:{run_a}:noidem');
  });
});
