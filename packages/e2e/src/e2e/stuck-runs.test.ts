import { afterEach, describe, expect, it } from 'vitest';
import { checkEvents, checkTranscript, type Script } from '@agentloop/testing';
import { ProcessStack } from '../test-support/stack.js';

/** Runs that no job would ever pick up again: each ends, or finishes, within a bound and says why. */
describe('nothing left stuck', () => {
  let s: ProcessStack | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('a deployment without a compressor: a summary nobody writes is given up at its deadline, and the run prunes and completes', async () => {
    const { SUMMARIZE_SYSTEM } = await import('@agentloop/llm');
    let calls = 0;
    const script: Script = (req) => {
      if (req.messages[0]?.content === SUMMARIZE_SYSTEM) return { text: '- summary' };
      return req.tools.length && calls < 6 ? ((calls += 1), { toolCalls: [{ name: 'big', args: { n: 3000 + calls } }] }) : { text: `done after ${calls}` };
    };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script, contextWindows: { 'gpt-4o-mini': 4000 }, env: { AGENTLOOP_SUMMARY_DEADLINE_MS: '1500' } });
    const id = await s.a.startRun({ input: 'fetch', model: { provider: 'openai', name: 'gpt-4o-mini', contextWindow: 4000 }, tools: ['big'] });
    const snap = await s.a.waitTerminal(id, 60_000);
    expect(snap).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    const events = (await s.a.events(id)).events;
    const compressed = events.filter((e) => e.type === 'context.compressed').map((e) => e.data.strategy);
    expect(compressed.length).toBeGreaterThan(0);
    expect(new Set(compressed)).toEqual(new Set(['prune']));
    expect(s.mock.requests.some((r) => r.messages[0]?.content === SUMMARIZE_SYSTEM)).toBe(false); // nobody summarized
    expect(checkEvents(events)).toEqual([]);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    expect(s.procs.get('orchestrator')!.output.some((l) => l.includes('no summary was recorded before its deadline'))).toBe(true);
  }, 120_000);
});
