import { describe, expect, it } from 'vitest';
import { DeploymentKeys } from './keys.js';

describe('DeploymentKeys.run', () => {
  it('builds a run’s keys once and names them the same every time', () => {
    const keys = new DeploymentKeys('p');
    const a = keys.run('run_abc');
    expect(keys.run('run_abc')).toBe(a);
    expect(a).toMatchObject({ state: 'p:run:{run_abc}', messages: 'p:run:{run_abc}:msgs', events: 'p:run:{run_abc}:events', eventsChannel: 'p:run:{run_abc}:ev' });
    const long = 'x'.repeat(65); // not kept: a request path may name any id
    expect(keys.run(long)).not.toBe(keys.run(long));
    expect(keys.run(long).state).toBe(`p:run:{${long}}`);
  });
});
