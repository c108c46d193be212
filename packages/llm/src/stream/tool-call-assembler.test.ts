import { describe, expect, it } from 'vitest';
import { ToolCallAssembler } from './tool-call-assembler.js';

describe('ToolCallAssembler', () => {
  it('concatenates argument fragments and takes id and name when present', () => {
    const a = new ToolCallAssembler();
    a.add({ index: 0, id: 'call_1', name: 'calc', arguments: '' });
    for (const f of ['{"exp', 'ression"', ':"1+', '1"}']) a.add({ index: 0, arguments: f });
    expect(a.finish()).toEqual([{ id: 'call_1', name: 'calc', arguments: '{"expression":"1+1"}' }]);
  });

  it('keeps parallel calls apart when their fragments interleave by index, in index order', () => {
    const a = new ToolCallAssembler();
    a.add({ index: 1, id: 'b', name: 'two', arguments: '{"y"' });
    a.add({ index: 0, id: 'a', name: 'one', arguments: '{"x"' });
    a.add({ index: 1, arguments: ':2}' });
    a.add({ index: 0, arguments: ':1}' });
    expect(a.finish()).toEqual([
      { id: 'a', name: 'one', arguments: '{"x":1}' },
      { id: 'b', name: 'two', arguments: '{"y":2}' },
    ]);
  });

  it('generates a unique id for calls the provider gave none', () => {
    const a = new ToolCallAssembler();
    a.add({ index: 0, name: 'x', arguments: '{}' });
    a.add({ index: 1, name: 'x', arguments: '{}' });
    const [c0, c1] = a.finish();
    expect(c0!.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(c1!.id).not.toBe(c0!.id);
  });

  it('replaces the arguments when a later fragment restates the whole object', () => {
    const a = new ToolCallAssembler();
    a.add({ index: 0, id: 'c', name: 'n', arguments: '{"a":' });
    a.add({ index: 0, arguments: '1}' });
    a.add({ index: 0, arguments: '{"a":1}' });
    expect(a.finish()[0]!.arguments).toBe('{"a":1}');
    const b = new ToolCallAssembler();
    b.add({ index: 0, id: 'c', name: 'n', arguments: '{"a":' });
    b.add({ index: 0, arguments: '{"a":1,"b":2}' }); // cumulative restatement of an unfinished prefix
    expect(b.finish()[0]!.arguments).toBe('{"a":1,"b":2}');
  });

  it('does not mistake a nested object value for a restatement', () => {
    const a = new ToolCallAssembler();
    a.add({ index: 0, id: 'c', name: 'n', arguments: '{"outer":' });
    a.add({ index: 0, arguments: '{"inner":1}' });
    a.add({ index: 0, arguments: '}' });
    expect(JSON.parse(a.finish()[0]!.arguments)).toEqual({ outer: { inner: 1 } });
  });

  it('treats a call with no arguments as {}', () => {
    const a = new ToolCallAssembler();
    a.add({ index: 0, id: 'c', name: 'now' });
    expect(a.finish()).toEqual([{ id: 'c', name: 'now', arguments: '{}' }]);
  });
});

describe('a call without a name', () => {
  it('is kept under the reserved name, so the loop can answer it', async () => {
    const { UNNAMED_TOOL } = await import('@agentloop/protocol');
    const a = new ToolCallAssembler();
    a.add({ index: 0, id: 'c1', arguments: '{"expression":"1+1"}' });
    a.add({ index: 1 }); // an entry with nothing in it is still a call the model opened
    const [first, second] = a.finish();
    expect(first).toEqual({ id: 'c1', name: UNNAMED_TOOL, arguments: '{"expression":"1+1"}' });
    expect(second).toMatchObject({ name: UNNAMED_TOOL, arguments: '{}' });
  });
});
