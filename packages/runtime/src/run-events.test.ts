import { describe, expect, it } from 'vitest';
import { RunRequestSchema, newRunId, type NewEvent } from '@agentloop/protocol';

import { useTestStore } from './test-support/test-store.js';

describe('reading a run’s events (real Redis)', () => {
  const t = useTestStore('events');
  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
  /** A run with `deltas` message.delta events after its first three (run.queued, run.started, iteration.started). */
  const longRun = async (deltas: number) => {
    const s = t.store;
    const runId = newRunId();
    await s.create({ runId, tenant: 'T', request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
    await s.startIteration(runId, {
      iteration: 1,
      expectPhase: 'queued',
      expectPendingFinal: '',
      callMode: 'tools',
      events: [
        { type: 'run.started', data: {} },
        { type: 'iteration.started', data: { iteration: 1 } },
      ],
    });
    const events: NewEvent[] = Array.from({ length: deltas }, (_, i) => ({
      type: 'message.delta',
      data: { iteration: 1, text: `${i}` },
    }));
    await s.appendEvents(runId, 1, events);
    return runId;
  };

  {
    it('replays a long run a bounded page at a time', async () => {
      const runId = await longRun(1200);
      const first = await t.store.eventsRaw(runId, 0);
      expect(first.events).toHaveLength(500);
      expect(first).toMatchObject({ through: 500, last: 1203 });
      expect(JSON.parse(first.events[499]!).seq).toBe(500);
      const small = await t.store.eventsRaw(runId, 1190, 5);
      expect(small.events.map((e) => JSON.parse(e).seq)).toEqual([1191, 1192, 1193, 1194, 1195]);
      expect(small.through).toBe(1195);
      const tail = await t.store.eventsRaw(runId, 1200);
      expect(tail).toMatchObject({ through: 1203, last: 1203 });
      expect(tail.events).toHaveLength(3);
      expect((await t.store.events(runId)).map((e) => e.seq)).toEqual(Array.from({ length: 1203 }, (_, i) => i + 1));
    });
  }

  it('steps over a seq missing from the log : never a null, never stuck', async () => {
    const runId = await longRun(1200);
    await t.redis.hdel(t.store.keys.run(runId).state, 'e:2', 'e:500', 'e:501', 'e:1203');
    const page = await t.store.eventsRaw(runId, 499);
    expect(page.events.map((e) => JSON.parse(e).seq).slice(0, 2)).toEqual([502, 503]);
    expect(page.through).toBe(999);
    const atGap = await t.store.eventsRaw(runId, 1202); // only a missing seq left: covered, nothing returned
    expect(atGap).toEqual({ events: [], through: 1203, last: 1203 });
    const seqs = (await t.store.events(runId)).map((e) => e.seq);
    expect(seqs).toHaveLength(1199);
    expect(seqs.filter((q) => [2, 500, 501, 1203].includes(q))).toEqual([]);
  });

  it('a run that does not exist has no events', async () => {
    expect(await t.store.eventsRaw(newRunId(), 7)).toEqual({ events: [], through: 7, last: 0 });
    expect(await t.store.events(newRunId())).toEqual([]);
  });
});
