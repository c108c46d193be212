import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_TOOLS_MODULE, stepOf, stepResults, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun } from '../test-support/helpers.js';

// tools with isolation: "process" that run out of memory, spin, or answer (the tool-runner's own test fixture)
const ISOLATED = fileURLToPath(
  new URL('../../../../services/tool-runner/src/isolation/test-fixtures/isolated-tools.mjs', import.meta.url),
);

const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  misbehave: (req) =>
    stepOf(req) === 0
      ? {
          toolCalls: [
            { name: 'hog', args: {} },
            { name: 'spin', args: {} },
            { name: 'whoami', args: {} },
          ],
        }
      : { text: `done: ${stepResults(req, 0).length} results` },
  plain: (req) =>
    stepOf(req) === 0
      ? { toolCalls: [{ name: 'calculator', args: { expression: '6*7' } }] }
      : { text: `result: ${stepResults(req, 0)[0]}` },
};
const body = (scenario: string, tools: string[]) => ({
  input: `[${scenario}] please`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools,
});

describe('isolation: "process" through the product (SPEC §6)', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({
      script: byScenario(scenarios, 'plain'),
      env: { AGENTLOOP_TOOL_MODULES: `${TEST_TOOLS_MODULE},${ISOLATED}`, AGENTLOOP_ISOLATION_MEMORY_MB: '64' },
    });
  });
  afterAll(() => s?.stop());

  it('a tool out of memory and one spinning forever are tool results of their run; the runner serves other runs meanwhile', async () => {
    const bad = await s.a.startRun(body('misbehave', ['hog', 'spin', 'whoami']));
    const good = await s.a.startRun(body('plain', ['calculator']));
    const plain = await finishedRun(s.a, good);
    expect(plain.snap.status).toBe('completed');
    expect(plain.messages.at(-1)?.content).toContain('42');

    const { snap, messages } = await finishedRun(s.a, bad);
    expect(snap.status).toBe('completed');
    const [hog, spin, whoami] = messages
      .filter((m) => m.role === 'tool')
      .map(
        (m) =>
          JSON.parse(m.content!) as {
            ok?: boolean;
            error?: { code: string; message: string };
            pid?: number;
            ppid?: number;
          },
      );
    expect(hog).toMatchObject({
      ok: false,
      error: {
        code: 'tool_error',
        message: expect.stringMatching(/ran out of memory: its process may use 64 MB of heap/),
      },
    });
    expect(spin).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(whoami!.ppid).toBe(process.pid); // a child of this process, where the stack's tool-runner runs
    expect(whoami!.pid).not.toBe(process.pid);
    const metrics = (await s.a.request('GET', '/metrics')).text;
    expect(metrics).toMatch(/agentloop_tool_calls_total\{tool="hog",status="error"\} 1/);
    expect(metrics).toMatch(/agentloop_tool_calls_total\{tool="whoami",status="completed"\} 1/);
  });
});
