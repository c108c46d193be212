import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from './metrics.js';
import { openFds } from './process-gauges.js';

/** A sample's value from a Prometheus text, by its name with labels (`name` or `name{type="x"}`). */
const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('process gauges at a scrape', () => {
  const sockets: net.Socket[] = [];
  let server: net.Server;

  beforeAll(async () => {
    let accept: () => void;
    const accepted = new Promise<void>((r) => (accept = r));
    server = net.createServer((s) => (sockets.push(s), sockets.length === 400 && accept()));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as net.AddressInfo;
    for (let i = 0; i < 200; i++) sockets.push(net.connect(port, '127.0.0.1'));
    await accepted;
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  it('counts file descriptors and resources without walking them on the event loop', async () => {
    const metrics = new Metrics();
    const walks: string[] = [];
    const proc = process as unknown as Record<string, unknown>;
    const [handles, readdirSync] = [proc['_getActiveHandles'] as () => unknown[], fs.readdirSync];
    proc['_getActiveHandles'] = () => (walks.push('_getActiveHandles'), handles.call(process));
    (fs as { readdirSync: unknown }).readdirSync = (...a: Parameters<typeof fs.readdirSync>) => (
      walks.push(`readdirSync ${String(a[0])}`),
      readdirSync(...a)
    );
    let text: string;
    try {
      text = await metrics.text();
    } finally {
      proc['_getActiveHandles'] = handles;
      fs.readdirSync = readdirSync;
    }
    expect(walks).toEqual([]);

    // 200 client sockets and the 200 the server accepted, each a descriptor and a TCPSocketWrap
    const listed = readdirSync('/proc/self/fd').length - 1;
    const fds = sample(text, 'process_open_fds')!;
    expect(fds).toBeGreaterThanOrEqual(400);
    expect(Math.abs(fds - listed)).toBeLessThanOrEqual(2);
    expect(await openFds()).toBe(listed);
    const tcp = sample(text, 'nodejs_active_resources{type="TCPSocketWrap"}')!;
    expect(tcp).toBeGreaterThanOrEqual(400);
    expect(sample(text, 'nodejs_active_resources{type="TCPServerWrap"}')).toBeGreaterThanOrEqual(1);
    const types = text.split('\n').filter((l) => l.startsWith('nodejs_active_resources{'));
    const sum = types.reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    expect(sample(text, 'nodejs_active_resources_total')).toBe(sum);
    expect(text).not.toContain('nodejs_active_handles');
    // the rest of the defaults stay
    for (const name of ['process_cpu_seconds_total', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds'])
      expect(sample(text, name)).toBeGreaterThanOrEqual(0);
  });
});
