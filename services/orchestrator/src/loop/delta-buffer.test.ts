import { describe, expect, it } from 'vitest';
import type { NewEvent } from '@agentloop/protocol';
import { DeltaBuffer } from './delta-buffer.js';

describe('DeltaBuffer', () => {
  it('coalesces deltas into few ordered writes and hands the rest to drain()', async () => {
    const writes: NewEvent[][] = [];
    const b = new DeltaBuffer(1, async (events) => void writes.push(events), 5, 10);
    b.text('hello ');
    b.text('world, this is long');
    b.reasoning('hm');
    await new Promise((r) => setTimeout(r, 20));
    b.text('tail');
    const rest = await b.drain();
    expect(
      writes
        .flat()
        .map((e) => (e.data as { text: string }).text)
        .join('|'),
    ).toBe('hello world, this is long|hm');
    expect(rest.map((e) => (e.data as { text: string }).text)).toEqual(['tail']);
  });

  it('a failed write is reported by flush() and drain(), never as an unhandled rejection, and stops later writes', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      let calls = 0;
      const b = new DeltaBuffer(
        1,
        async () => {
          calls++;
          throw new Error('redis down');
        },
        1,
        3,
      );
      b.text('abcdef'); // over maxChars: written at once, and fails
      b.text('ghijkl');
      await new Promise((r) => setTimeout(r, 20));
      await expect(b.flush()).rejects.toThrow('redis down');
      await expect(b.drain()).rejects.toThrow('redis down');
      expect(calls).toBe(1);
      await new Promise((r) => setTimeout(r, 10));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('held: writes nothing before the hold resolves, then everything in order; dropped: writes nothing at all', async () => {
    let release!: (ok: boolean) => void;
    const writes: string[] = [];
    const held = new DeltaBuffer(
      1,
      async (events) => void writes.push(events.map((e) => (e.data as { text: string }).text).join('')),
      1,
      3,
      new Promise<boolean>((r) => (release = r)),
    );
    held.text('abcdef'); // over maxChars: a write is due at once
    await new Promise((r) => setTimeout(r, 20));
    expect(writes).toEqual([]);
    release(true);
    held.text('gh');
    expect(await held.drain()).toHaveLength(1); // the tail, for the checkpoint
    expect(writes).toEqual(['abcdef']);

    const dropped: string[] = [];
    const drop = new DeltaBuffer(
      1,
      async (events) => void dropped.push(String(events.length)),
      1,
      3,
      Promise.resolve(false),
    );
    drop.text('abcdef');
    drop.text('tail');
    await drop.flush();
    expect(await drop.drain()).toEqual([]);
    expect(dropped).toEqual([]);
  });
});
