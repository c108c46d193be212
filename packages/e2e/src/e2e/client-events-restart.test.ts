import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentloopClient } from '@agentloop/client';
import type { EventEnvelope } from '@agentloop/protocol';
import { stepOf } from '@agentloop/testing';
import { ProcessStack } from '../test-support/stack.js';
import { until } from '../test-support/helpers.js';

/** client.runs.events across a restart of the api process (its own OS process, killed with SIGKILL mid-run). */
describe('client.runs.events: an api killed and restarted mid-run', () => {
  let s: ProcessStack;
  beforeAll(async () => {
    const script = (req: Parameters<typeof stepOf>[0]) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'effect', args: { ms: 3000, label: 'restart' } }] }
        : { text: 'finished after the restart', chunking: 'fine' as const };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], {
      script,
      env: { AGENTLOOP_DRAIN_MS: '1000' },
    });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('yields every event of the run once, in order, with no gap, reconnecting with Last-Event-ID', async () => {
    const client = new AgentloopClient({ baseUrl: s.a.baseUrl, apiKey: 'key-a' });
    const { id } = await client.runs.create({
      input: 'survive a restart',
      model: { provider: 'openai', name: 'gpt-4o-mini', api: 'chat' },
      tools: ['effect'],
    });
    const got: EventEnvelope[] = [];
    const reconnects: Array<{ lastSeq: number; reason: string }> = [];
    const following = (async () => {
      for await (const e of client.runs.events(id, { baseDelayMs: 100, onReconnect: (r) => reconnects.push(r) }))
        got.push(e);
    })();
    await until('the effect to start', () => s.effects().some((e) => e.label === 'restart' && e.phase === 'start'));
    const seenBeforeKill = got.length;
    await s.kill('api', 'SIGKILL');
    await new Promise((r) => setTimeout(r, 500)); // reconnects meet a closed port meanwhile
    await s.spawn('api#2');
    await following;

    const stored = (await s.a.events(id)).events;
    expect(stored.at(-1)).toMatchObject({ type: 'run.completed', data: { output: 'finished after the restart' } });
    expect(got.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
    expect(got).toEqual(stored);
    expect(seenBeforeKill).toBeGreaterThan(0);
    expect(reconnects.length).toBeGreaterThanOrEqual(1);
    expect(reconnects[0]!.lastSeq).toBeGreaterThanOrEqual(seenBeforeKill);
  }, 90_000);
});
