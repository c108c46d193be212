import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { executeToolCall } from './execute-tool-call.js';
import { ToolRegistry } from './registry.js';

const ctx = { runId: 'r', callId: 'c', tenantId: 't', idempotencyKey: 'r:c', logger: console };
const opts = { maxResultBytes: 1000, maxResultTokens: 50 };
const reg = new ToolRegistry();
reg.add({
  name: 'zed',
  sideEffect: 'read',
  parameters: z.object({ n: z.number().int() }),
  execute: (a) => ({ twice: (a.n as number) * 2 }),
});
reg.add({ name: 'huge', sideEffect: 'read', parameters: { type: 'object' }, execute: () => 'q'.repeat(5000) });
reg.add({
  name: 'deep',
  sideEffect: 'read',
  parameters: { type: 'object' },
  execute: () => JSON.parse('['.repeat(300) + ']'.repeat(300)),
});
reg.add({
  name: 'loud',
  sideEffect: 'read',
  parameters: { type: 'object' },
  execute: () => {
    throw new Error('e'.repeat(100_000));
  },
});
reg.add({ name: 'long', sideEffect: 'read', parameters: { type: 'object' }, execute: () => 'w'.repeat(900) });
const seen: Array<{ reason: string; aborted: boolean }> = [];
let started = 0;
reg.add({
  name: 'watches_signal',
  sideEffect: 'read',
  timeoutMs: 50,
  parameters: { type: 'object', properties: { wait: { type: 'boolean', default: true } } },
  execute: (a, c) =>
    new Promise((resolve) => {
      started++;
      if (!a.wait) return resolve({ wait: a.wait });
      c.signal.addEventListener('abort', () => {
        seen.push({ reason: (c.signal.reason as Error).name, aborted: c.signal.aborted });
        resolve('stopped');
      });
    }),
});
reg.add({
  name: 'ignores_abort',
  sideEffect: 'read',
  timeoutMs: 100,
  parameters: { type: 'object' },
  execute: () => new Promise((r) => setTimeout(() => r('late'), 2000)),
});
const run = (name: string, args: string, signal = new AbortController().signal) =>
  executeToolCall(reg.get(name), name, args, ctx, signal, opts);
const codeOf = async (p: ReturnType<typeof run>) => (await p).error?.code;

describe('executeToolCall: every failure is a structured result', () => {
  it('refuses a result too deep for the run to store, and caps a thrown message', async () => {
    expect(await codeOf(run('deep', '{}'))).toBe('tool_error');
    const loud = await run('loud', '{}');
    expect(loud.error?.code).toBe('tool_error');
    expect(loud.content.length).toBeLessThan(2_000);
  });
  it('bounds what it quotes of the model: a schema violation per key of a huge object, a tool name of any length', async () => {
    const keys = Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`a${i}`, 0]));
    const wide = await run('calculator', JSON.stringify(keys)); // additionalProperties: false and a missing expression
    expect(wide.error?.code).toBe('invalid_arguments');
    expect(wide.content.length).toBeLessThan(10_000);
    expect(wide.error?.message).toMatch(/… and \d+ more$/);
    const name = 'n'.repeat(100_000);
    const unknown = await executeToolCall(undefined, name, '{}', ctx, new AbortController().signal, opts);
    expect(unknown.error?.code).toBe('unknown_tool');
    expect(unknown.content.length).toBeLessThan(500);
  });
  it('runs a tool and returns its JSON', async () => {
    const r = await run('calculator', '{"expression":"6*7"}');
    expect(r).toMatchObject({ status: 'completed', content: '{"value":42}', result: { value: 42 } });
  });
  it('validates against a zod schema too', async () => {
    expect((await run('zed', '{"n":4}')).content).toBe('{"twice":8}');
    expect(await codeOf(run('zed', '{"n":"4"}'))).toBe('invalid_arguments');
  });
  it.each([
    ['nope', '{}', 'unknown_tool'],
    ['calculator', '{oops', 'invalid_arguments'],
    ['calculator', '[1]', 'invalid_arguments'],
    ['calculator', '"text"', 'invalid_arguments'],
    ['calculator', '{"expression":1}', 'invalid_arguments'],
    ['calculator', `{"expression":${'['.repeat(70)}${']'.repeat(70)}}`, 'invalid_arguments'],
    ['calculator', '{"expression":"1/0"}', 'tool_error'],
    ['huge', '{}', 'result_too_large'],
  ])('%s %s → %s', async (name, args, code) => {
    const r = await run(name, args);
    expect(r.error?.code).toBe(code);
    expect(JSON.parse(r.content)).toEqual({
      ok: false,
      error: { code, message: expect.any(String), retryable: expect.any(Boolean) },
    });
  });
  it('times out a tool that ignores its signal', async () => {
    expect(await codeOf(run('ignores_abort', '{}'))).toBe('timeout');
  });
  it("aborts the tool's signal with a TimeoutError at its timeout, and with the caller's reason on cancel", async () => {
    seen.length = 0;
    expect(await codeOf(run('watches_signal', '{}'))).toBe('timeout');
    const ac = new AbortController();
    const p = run('watches_signal', '{}', ac.signal);
    setTimeout(() => ac.abort(Object.assign(new Error('cancel'), { name: 'RunCancelled' })), 10);
    expect(await codeOf(p)).toBe('cancelled');
    expect(seen).toEqual([
      { reason: 'TimeoutError', aborted: true },
      { reason: 'RunCancelled', aborted: true },
    ]);
    // a caller signal aborted before the call starts: the tool is not started at all
    const gone = new AbortController();
    gone.abort(Object.assign(new Error('gone'), { name: 'RunCancelled' }));
    const before = started;
    const never = await run('watches_signal', '{}', gone.signal);
    expect(never.error?.code).toBe('cancelled');
    expect(never.executed).toBeFalsy();
    expect(started).toBe(before);
  });
  it("ends the tool's signal with its call: work left running past the result is told to stop", async () => {
    let left: AbortSignal | undefined;
    reg.add({
      name: 'leaves_work',
      sideEffect: 'read',
      parameters: { type: 'object' },
      execute: (_a, c) => {
        left = c.signal;
        return 'done';
      },
    });
    expect((await run('leaves_work', '{}')).status).toBe('completed');
    expect(left?.aborted).toBe(true);
    expect((left?.reason as Error).name).toBe('AbortError');
  });
  it('fills schema defaults into the arguments the tool gets', async () => {
    expect((await run('watches_signal', '{"wait":false}')).result).toEqual({ wait: false });
    expect(await codeOf(run('watches_signal', '{}'))).toBe('timeout'); // wait defaulted to true
  });
  it('answers cancelled when the caller aborts', async () => {
    const ac = new AbortController();
    const p = run('sleep', '{"ms":10000}', ac.signal);
    setTimeout(() => ac.abort(), 20);
    expect(await codeOf(p)).toBe('cancelled');
  });
  it('caps the text the model sees at head + marker + tail, keeping the full result', async () => {
    const r = await run('long', '{}');
    expect(r.content.length).toBeLessThan(300);
    expect(r.content).toMatch(/^w+\n\[… \d+ characters \(about \d+ tokens\) cut from this tool result …\]\nw+$/);
    expect(r.result).toHaveLength(900);
  });
});

describe('ToolRegistry.withModules', () => {
  it('refuses a module whose definitions are invalid, saying which', async () => {
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'tools-'));
    writeFileSync(
      join(dir, 'bad.mjs'),
      'export default [{ name: "bad name", sideEffect: "read", parameters: {}, execute() {} }];',
    );
    await expect(ToolRegistry.withModules([join(dir, 'bad.mjs')])).rejects.toThrow(/bad\.mjs, tool #0: name/);
    writeFileSync(
      join(dir, 'good.mjs'),
      'export default [{ name: "ok_tool", sideEffect: "external", pool: "sandbox", parameters: { type: "object" }, execute() { return 1; } }];',
    );
    const reg = await ToolRegistry.withModules([join(dir, 'good.mjs')]);
    expect(reg.get('ok_tool')!.entry).toMatchObject({ pool: 'sandbox', sideEffect: 'external', retry: 'safe' });
    expect(reg.pools().sort()).toEqual(['default', 'sandbox']);
  });

  it('loads isolation "process" and "none", and refuses any other value naming the tool and the module', async () => {
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'tools-'));
    const mod = (isolation: string) =>
      `export default [{ name: "sandboxed", sideEffect: "read", parameters: { type: "object" }, isolation: "${isolation}", execute() { return 1; } }];`;
    writeFileSync(join(dir, 'odd.mjs'), mod('container'));
    await expect(ToolRegistry.withModules([join(dir, 'odd.mjs')])).rejects.toThrow(
      /odd\.mjs, tool sandboxed \(#0\): isolation: /,
    );
    for (const isolation of ['process', 'none']) {
      writeFileSync(join(dir, `${isolation}.mjs`), mod(isolation));
      const reg = await ToolRegistry.withModules([join(dir, `${isolation}.mjs`)]);
      expect(
        (await executeToolCall(reg.get('sandboxed'), 'sandboxed', '{}', ctx, new AbortController().signal, opts))
          .result,
      ).toBe(1);
      reg.close();
    }
  });
});
