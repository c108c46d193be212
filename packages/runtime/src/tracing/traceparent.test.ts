import { describe, expect, it } from 'vitest';
import { context, trace } from '@opentelemetry/api';
import {
  activeTraceparent,
  formatTraceparent,
  parseTraceparent,
  traceIdOf,
  traceLogFields,
  traceOfJob,
  withTraceparent,
} from './traceparent.js';

const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('traceparent (job data, run state): hostile values are ignored, never thrown', () => {
  it('parses a W3C traceparent and formats it back', () => {
    const sc = parseTraceparent(TP)!;
    expect(sc).toMatchObject({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: 1,
      isRemote: true,
    });
    expect(formatTraceparent(sc)).toBe(TP);
    expect(traceIdOf(TP)).toBe('0af7651916cd43dd8448eb211c80319c');
  });

  it('refuses malformed, all-zero and other-version values', () => {
    for (const bad of [
      undefined,
      '',
      'garbage',
      TP.toUpperCase(),
      `${TP}-x`,
      '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      `00-${'0'.repeat(32)}-b7ad6b7169203331-01`,
      `00-0af7651916cd43dd8448eb211c80319c-${'0'.repeat(16)}-01`,
    ])
      expect(parseTraceparent(bad), String(bad)).toBeNull();
    expect(traceIdOf('garbage')).toBe('');
    expect(traceIdOf(TP.replace(/-01$/, '-00'))).toBe(''); // not sampled: no exemplar leads to it
  });

  it('with tracing off, a traceparent changes nothing: no active span, no log fields, no stored-root read', async () => {
    let read = false;
    expect(await traceOfJob(undefined, async () => ((read = true), TP))).toBeUndefined();
    expect(read).toBe(false);
    expect(await traceOfJob(TP, async () => 'other')).toBe(TP);
    withTraceparent(TP, () => {
      expect(trace.getSpanContext(context.active())).toBeUndefined();
      expect(activeTraceparent()).toBeUndefined();
      expect(traceLogFields()).toEqual({});
    });
  });
});
