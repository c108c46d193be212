import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RUN_FIELD_WRITERS, RunRequestSchema, newRunId } from '@agentloop/protocol';
import { SCRIPTS, commonLua } from './scripts.js';
import { useTestStore } from './test-support/test-store.js';

/** protocol's RUN_FIELD_WRITERS, compiled into every script: a control field changes only where the table says. */
describe("the run's control fields have declared writers (real Redis)", () => {
  const t = useTestStore('field-writers');
  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });

  it('is drawn in ARCHITECTURE as it is declared', () => {
    const doc = fs.readFileSync(new URL('../../../docs/ARCHITECTURE.md', import.meta.url), 'utf8');
    const names = (xs: readonly string[]) => (xs.length ? xs.map((x) => `\`${x}\``).join(', ') : '—');
    for (const [field, w] of Object.entries(RUN_FIELD_WRITERS))
      expect(doc).toContain(`| \`${field}\` | ${w.means} | ${names(w.set)} | ${names(w.clear)} |`);
  });

  it('names real scripts', () => {
    for (const [field, w] of Object.entries(RUN_FIELD_WRITERS))
      for (const name of [...w.set, ...w.clear]) expect(Object.keys(SCRIPTS), `${field}: ${name}`).toContain(name);
  });

  /** A step named `script` that sets (or clears) `field` and commits, as any script's body would. */
  async function write(script: string, field: string, value: string): Promise<string> {
    const runId = newRunId();
    await t.store.create({ runId, tenant: 'T', request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
    const body = `set('${field}', '${value}')\ncommit(rcall('HGET', stateKey, 'seq'), 0)\nreturn 'written'`;
    const now = Date.now();
    return String(
      await t.redis.eval(
        `${commonLua(script)}\n${body}`,
        10,
        ...t.store.keys.runScript(runId),
        runId,
        new Date(now).toISOString(),
        now,
        t.store.keys.run(runId).eventsChannel,
        '',
      ),
    );
  }

  it('a step the table lists writes the field; any other step is refused before it writes anything', async () => {
    expect(await write('requestCancel', 'cancel', 'user')).toBe('written');
    await expect(write('recordToolResult', 'cancel', 'user')).rejects.toThrow(
      /ILLEGAL_WRITE .*recordToolResult may not set cancel/,
    );
    expect(await write('startIteration', 'owner', 'job@A')).toBe('written');
    await expect(write('checkpointResponse', 'owner', 'job@A')).rejects.toThrow(/may not set owner/);
    await expect(write('requestCancel', 'resuming', '')).rejects.toThrow(/may not clear resuming/);
    expect(await write('startIteration', 'resuming', '')).toBe('written');
  });
});
