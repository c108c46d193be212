import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { lazyChild } from './lazy-logger.js';

/** A pino logger writing JSON lines into `lines`, counting the child loggers made of it. */
function recordingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level: 'debug', base: null }, sink);
  let children = 0;
  const child = logger.child.bind(logger);
  logger.child = ((...a: Parameters<typeof child>) => (children++, child(...a))) as typeof logger.child;
  return { logger, lines, children: () => children };
}

describe("a tool call's logger", () => {
  it('is made only when the tool logs, once, and carries the call bindings at every level', async () => {
    const r = recordingLogger();
    const silent = lazyChild(r.logger, { runId: 'run_1', callId: 'call_1', tool: 'noop' });
    expect(silent).toBeTruthy();
    expect(r.children()).toBe(0);

    const log = lazyChild(r.logger, { runId: 'run_2', callId: 'call_2', tool: 'fetch' });
    log.info({ url: 'x' }, 'fetching');
    log.warn('slow');
    log.error('failed');
    log.debug('details');
    await new Promise((res) => setImmediate(res));
    expect(r.children()).toBe(1);
    expect(r.lines.map((l) => [l.level, l.msg, l.runId, l.callId, l.tool])).toEqual([
      [30, 'fetching', 'run_2', 'call_2', 'fetch'],
      [40, 'slow', 'run_2', 'call_2', 'fetch'],
      [50, 'failed', 'run_2', 'call_2', 'fetch'],
      [20, 'details', 'run_2', 'call_2', 'fetch'],
    ]);
    expect(r.lines[0]!.url).toBe('x');
  });
});
