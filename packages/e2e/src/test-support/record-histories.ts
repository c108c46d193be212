/**
 * Records the histories the orchestrator's replay test reads (services/orchestrator/src/loop/histories/v<N>/): real
 * runs through every role in this process, against the mock model, each decision of the pure deciders written as one
 * JSON line. Run once per schemaVersion (`node packages/e2e/dist/test-support/record-histories.js`) and commit the
 * result; a recorded version is never regenerated. A scenario added later is recorded alone, by name
 * (`… record-histories.js local`): the recorded ones stay as they are.
 */
import fs from 'node:fs';
import path from 'node:path';
import { SCHEMA_VERSION } from '@agentloop/protocol';
import { REPO_ROOT, stepOf, stepResults, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { recordingPlanner, type HistoryEntry } from '@agentloop/orchestrator';
import { InProcessStack } from './stack.js';
import { byScenario } from './helpers.js';

const model = { provider: 'openai', name: 'gpt-4o-mini', api: 'chat' };
const SCENARIOS: Record<
  string,
  { reply: (req: MockRequest) => ReplySpec; body: Record<string, unknown>; decide?: boolean }
> = {
  parallel: {
    reply: (req) =>
      [
        {
          toolCalls: [
            { name: 'calculator', args: { expression: '17*23' }, id: 'call_a1' },
            { name: 'lookup', args: { key: 'x' }, id: 'call_a2' },
          ],
        },
        { toolCalls: [{ name: 'current_time', args: { timezone: 'Asia/Tokyo' }, id: 'call_b1' }] },
        { text: `done: ${stepResults(req, 0).join(' | ')}` },
      ][Math.min(stepOf(req), 2)]!,
    body: { tools: ['calculator', 'lookup', 'current_time'] },
  },
  approval: {
    reply: (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'lookup', args: { key: 'auto' }, id: 'call_p1' },
              { name: 'send_email', args: { to: 'a@b.c' }, id: 'call_p2' },
            ],
          }
        : { text: 'sent' },
    body: { tools: ['lookup', 'send_email'] },
    decide: true,
  },
  loop: {
    reply: (req) => ({ toolCalls: [{ name: 'lookup', args: { key: 'same' }, id: `call_l${stepOf(req)}` }] }),
    body: { tools: ['lookup'], limits: { repeatLimit: 2 } },
  },
  cap: {
    reply: (req) => ({ toolCalls: [{ name: 'lookup', args: { key: `k${stepOf(req)}` }, id: `call_c${stepOf(req)}` }] }),
    body: { tools: ['lookup'], limits: { maxIterations: 2 } },
  },
  problems: {
    reply: (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'no_such_tool', args: {}, id: 'call_u1' },
              { name: 'lookup', arguments: '[1,2]', id: 'call_u2' },
              { name: 'calculator', args: { expression: 1 }, id: 'call_u3' },
            ],
          }
        : { text: 'recovered' },
    body: { tools: ['lookup', 'calculator'] },
  },
  headless: {
    reply: (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' }, id: 'call_h1' }] }
        : { text: 'denied, fine' },
    body: { tools: ['send_email'], mode: 'headless' },
  },
  budget: {
    reply: (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'lookup', args: { key: 'a' }, id: 'call_t1' },
              { name: 'lookup', args: { key: 'b' }, id: 'call_t2' },
            ],
          }
        : { text: 'out of budget' },
    body: { tools: ['lookup'], limits: { maxToolCalls: 1 } },
  },
  // local calls (SPEC §6): a mixed batch (a local call between two pooled ones), then a batch of local calls only
  local: {
    reply: (req) =>
      [
        {
          toolCalls: [
            { name: 'lookup', args: { key: 'p' }, id: 'call_m1' },
            { name: 'local_effect', args: { label: 'here' }, id: 'call_m2' },
            { name: 'calculator', args: { expression: '6*7' }, id: 'call_m3' },
          ],
        },
        {
          toolCalls: [
            { name: 'local_effect', args: { label: 'again' }, id: 'call_n1' },
            { name: 'local_once', args: {}, id: 'call_n2' },
          ],
        },
        { text: `done: ${stepResults(req, 0).join(' | ')}` },
      ][Math.min(stepOf(req), 2)]!,
    body: { tools: ['lookup', 'calculator', 'local_effect', 'local_once'] },
  },
};

async function main(): Promise<void> {
  const entries: HistoryEntry[] = [];
  const scripts = Object.fromEntries(Object.entries(SCENARIOS).map(([n, s]) => [n, s.reply]));
  const s = await InProcessStack.start({
    script: byScenario(scripts, 'parallel'),
    planner: recordingPlanner((e) => entries.push(e)),
  });
  const dir = path.join(REPO_ROOT, `services/orchestrator/src/loop/histories/v${SCHEMA_VERSION}`);
  fs.mkdirSync(dir, { recursive: true });
  const only = process.argv.slice(2);
  try {
    for (const [name, sc] of Object.entries(SCENARIOS).filter(([n]) => !only.length || only.includes(n))) {
      entries.length = 0;
      const id = await s.a.startRun({ input: `[${name}] please`, model, ...sc.body });
      if (sc.decide) {
        const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
        await s.a.request('POST', `/v1/runs/${id}/decisions`, {
          decisions: paused.pending.map((p) => ({ callId: p.callId, action: 'approve' })),
        });
      }
      const snap = await s.a.waitTerminal(id, 20_000);
      const mine = entries.filter((e) => (e.kind === 'decideAdvance' ? e.st.id : e.input.st.id) === id);
      fs.writeFileSync(path.join(dir, `${name}.jsonl`), mine.map((e) => JSON.stringify(e)).join('\n') + '\n');
      console.log(`${name}: ${snap.status} ${snap.stopReason ?? ''}, ${mine.length} decisions`);
    }
  } finally {
    await s.stop();
  }
}

await main();
