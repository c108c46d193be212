import { describe, expect, it } from 'vitest';
import { SAFE_CALL_ID_RE, type Message } from '@agentloop/protocol';
import { normalizeCallIds } from './normalize-call-ids.js';

const msg = (...ids: Array<string | undefined>): Message => ({
  role: 'assistant',
  content: null,
  toolCalls: ids.map((id, i) => ({ id: id as string, name: 'calculator', arguments: `{"expression":"${i}"}` })),
});

describe('normalizeCallIds', () => {
  it('keeps safe, new ids as they are (no providerData added)', () => {
    const m = msg('call_1', 'call_2');
    expect(normalizeCallIds(m, 'openai')).toBe(m);
    expect(normalizeCallIds(m, 'openai').toolCalls!.map((c) => c.providerData)).toEqual([undefined, undefined]);
  });

  it('replaces unsafe, repeated and already used ids, keeping the provider id for the round trip', () => {
    const out = normalizeCallIds(
      msg('a:b', 'dup', 'dup', '', 'x'.repeat(65), 'used', 'ok/../x', 'ünï'),
      'google',
      new Set(['used']),
    );
    const ids = out.toolCalls!.map((c) => c.id);
    expect(ids[1]).toBe('dup');
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(SAFE_CALL_ID_RE);
    const originals = out.toolCalls!.map(
      (c) => (c.providerData as { providerCallId?: string } | undefined)?.providerCallId,
    );
    expect(originals).toEqual(['a:b', undefined, 'dup', '', 'x'.repeat(65), 'used', 'ok/../x', 'ünï']);
    expect((out.toolCalls![0]!.providerData as { provider?: string }).provider).toBe('google');
  });

  it('keeps a call provider data (a Gemini signature) when it renames the call', () => {
    const m: Message = {
      role: 'assistant',
      content: null,
      toolCalls: [
        { id: 'x:y', name: 't', arguments: '{}', providerData: { provider: 'google', thoughtSignature: 'sig' } },
      ],
    };
    expect(normalizeCallIds(m, 'google').toolCalls![0]!.providerData).toEqual({
      provider: 'google',
      thoughtSignature: 'sig',
      providerCallId: 'x:y',
    });
  });
});

describe('arguments over the size bound', () => {
  it('are not kept: a stand-in marked malformed replaces them', () => {
    const huge = JSON.stringify({ x: 'y'.repeat(1_100_000) });
    const out = normalizeCallIds(
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'c1', name: 't', arguments: huge },
          { id: 'c2', name: 't', arguments: '{}' },
        ],
      },
      'openai',
    );
    expect(out.toolCalls![0]).toMatchObject({
      id: 'c1',
      arguments: '{}',
      providerData: { malformed: expect.stringMatching(/over the 1048576 allowed/) },
    });
    expect(out.toolCalls![1]).toEqual({ id: 'c2', name: 't', arguments: '{}' });
  });
});
