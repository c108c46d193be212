import { describe, expect, it } from 'vitest';
import { RunRequestSchema } from '@agentloop/protocol';
import type { CatalogEntry } from '@agentloop/runtime';
import { classifyCalls, pauseReason } from './classify-calls.js';

const entry = (name: string, sideEffect: CatalogEntry['sideEffect']): CatalogEntry => ({
  name,
  description: '',
  parameters: {},
  sideEffect,
  pool: 'default',
  timeoutMs: 1000,
  retry: 'safe',
});
const catalog = new Map(
  [entry('read_it', 'read'), entry('mail', 'external'), entry('wipe', 'critical'), entry('edit', 'reversible')].map(
    (e) => [e.name, e],
  ),
);
const request = (over: Record<string, unknown> = {}) =>
  RunRequestSchema.parse({
    input: 'x',
    model: { provider: 'openai', name: 'm' },
    tools: ['read_it', 'mail', 'wipe', 'edit'],
    clientTools: [{ name: 'pick' }],
    ...over,
  });
const call = (name: string, args = '{}', id = `c_${name}_${Math.random()}`) => ({ id, name, arguments: args });
const base = { repeat: { fingerprint: '', count: 0 }, toolCallsLeft: Infinity, budgetExhausted: false, catalog };

describe('pause policy (SPEC §5)', () => {
  it('pauses external and critical tools, client tools, and required ones; autoApprove never covers critical', () => {
    const r = request({ approval: { require: ['edit'], autoApprove: ['mail', 'wipe'] } });
    expect(pauseReason(catalog.get('read_it'), 'read_it', r)).toBeNull();
    expect(pauseReason(catalog.get('edit'), 'edit', r)).toBe('awaiting_approval');
    expect(pauseReason(catalog.get('mail'), 'mail', r)).toBeNull();
    expect(pauseReason(catalog.get('wipe'), 'wipe', r)).toBe('awaiting_approval');
    expect(pauseReason(undefined, 'pick', r)).toBe('requires_client_execution');
    expect(pauseReason(catalog.get('mail'), 'mail', request())).toBe('awaiting_approval');
  });
});

describe('classifyCalls', () => {
  it('answers arguments too deep or too large with invalid_arguments, without walking them', () => {
    const deep = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000);
    const deepArray = '['.repeat(100_000) + ']'.repeat(100_000);
    const huge = JSON.stringify({ x: 'y'.repeat(2_000_000) });
    const r = classifyCalls({
      ...base,
      request: request(),
      calls: [call('read_it', deep), call('read_it', deepArray), call('read_it', huge), call('read_it', '{"ok":true}')],
    });
    expect(r.calls.map((c) => c.outcome?.error?.code ?? 'run')).toEqual([
      'invalid_arguments',
      'invalid_arguments',
      'invalid_arguments',
      'run',
    ]);
    expect(r.calls[0]!.outcome!.error!.message).toMatch(/nested deeper than 64/);
    // shown as (the start of) the raw text, and small enough for an event
    for (const c of r.calls.slice(0, 3)) expect(c.meta.display.length).toBeLessThan(10_000);
  });
  it('quotes the model boundedly and in well-formed JSON: a tool name of any length, a lone surrogate in the arguments', () => {
    const r = classifyCalls({
      ...base,
      request: request(),
      calls: [call('g'.repeat(100_000)), call('read_it', '{"a":"\\ud800 half an emoji"}')],
    });
    expect(r.calls[0]!.outcome!.content.length).toBeLessThan(500);
    expect(r.calls[1]!.meta.display).not.toMatch(/\\ud800/); // the display goes into events as it is: strict decoders refuse the escape
    expect(JSON.parse(r.calls[1]!.meta.display)).toEqual({ a: '\ufffd half an emoji' });
  });
  it('answers unknown tools and tools the run was not given', () => {
    const r = classifyCalls({
      ...base,
      request: request({ tools: ['read_it'] }),
      calls: [call('ghost'), call('edit'), call('read_it')],
    });
    expect(r.calls.map((c) => c.outcome?.error?.code ?? 'run')).toEqual(['unknown_tool', 'unknown_tool', 'run']);
  });
  it('lists as available only tools that can run: a tool the run names but the catalog lacks is not offered in the answer', () => {
    const r = classifyCalls({
      ...base,
      request: request({ tools: ['side_effect', 'read_it'] }),
      calls: [call('side_effect')],
    });
    expect(r.calls[0]!.outcome!.error).toMatchObject({
      code: 'unknown_tool',
      message: "Unknown tool 'side_effect'. Available tools: read_it, pick.",
    });
    const none = classifyCalls({
      ...base,
      request: request({ tools: ['side_effect'], clientTools: [] }),
      calls: [call('side_effect')],
    });
    expect(none.calls[0]!.outcome!.error!.message).toBe("Unknown tool 'side_effect'. Available tools: none.");
  });
  it('detects repeats across batches with normalized arguments', () => {
    const first = classifyCalls({
      ...base,
      request: request(),
      calls: [call('read_it', '{"a":1,"b":2}'), call('read_it', '{"b":2, "a":1}')],
    });
    expect(first.repeat.count).toBe(2);
    const second = classifyCalls({
      ...base,
      repeat: first.repeat,
      request: request(),
      calls: [call('read_it', '{"a":1,"b":2}')],
    });
    expect(second.calls[0]!.outcome?.error?.code).toBe('loop_detected');
    expect(second.pendingFinal).toBe('loop_detected');
    const other = classifyCalls({
      ...base,
      repeat: first.repeat,
      request: request(),
      calls: [call('read_it', '{"a":2}')],
    });
    expect(other.calls[0]!.outcome).toBeNull();
  });
  it('skips calls past maxToolCalls and everything once a budget is exhausted', () => {
    const r = classifyCalls({
      ...base,
      toolCallsLeft: 1,
      request: request(),
      calls: [call('read_it', '{"n":1}'), call('read_it', '{"n":2}')],
    });
    expect(r.calls.map((c) => c.outcome?.status ?? 'run')).toEqual(['run', 'skipped']);
    expect(r.pendingFinal).toBe('budget_exceeded');
    const b = classifyCalls({ ...base, budgetExhausted: true, request: request(), calls: [call('read_it')] });
    expect(b.calls[0]!.outcome?.status).toBe('skipped');
  });
  it('denies pausing calls in headless mode unless auto-approved (never critical or client tools)', () => {
    const r = classifyCalls({
      ...base,
      request: request({ mode: 'headless', approval: { autoApprove: ['mail', 'wipe'] } }),
      calls: [call('mail'), call('wipe'), call('pick'), call('read_it')],
    });
    expect(r.calls.map((c) => c.outcome?.status ?? 'run')).toEqual(['run', 'denied', 'denied', 'run']);
    expect(r.calls[1]!.outcome!.error!.message).toMatch(/^Tool denied \(headless\): /);
    expect(r.calls[1]!.skipReason).toBe('headless');
  });
  it('marks calls that need a person in interactive mode', () => {
    const r = classifyCalls({ ...base, request: request(), calls: [call('read_it'), call('mail'), call('pick')] });
    expect(r.calls.map((c) => c.pause ?? null)).toEqual([null, 'awaiting_approval', 'requires_client_execution']);
  });
});
