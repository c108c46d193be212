import fs from 'node:fs';
import client from 'prom-client';

/**
 * prom-client's default gauges that walk every open handle or file descriptor on the event loop at each scrape:
 * `readdirSync('/proc/self/fd')`, `process._getActiveHandles()` twice and `process.getActiveResourcesInfo()` twice.
 * With 16,000 sockets open (an orchestrator holding 10,000 model calls) one scrape blocked the loop 27 ms, and every
 * job that became ready meanwhile waited it out.
 */
const WALKING_GAUGES = [
  'process_open_fds',
  'nodejs_active_handles',
  'nodejs_active_handles_total',
  'nodejs_active_resources',
  'nodejs_active_resources_total',
] as const;

/**
 * The number of open file descriptors without listing them: Linux ≥ 6.2 reports it as the size of `/proc/self/fd`;
 * older kernels report 0, and the listing is then read off the event loop (the thread pool), less the descriptor
 * the listing itself held.
 */
export async function openFds(): Promise<number | null> {
  try {
    const { size } = await fs.promises.stat('/proc/self/fd');
    if (size > 0) return size;
    return (await fs.promises.readdir('/proc/self/fd')).length - 1;
  } catch {
    return null; // not Linux
  }
}

/**
 * Replaces the walking gauges of `registry` (registered by collectDefaultMetrics) with cheap ones of the same names:
 * `process_open_fds` (openFds), and `nodejs_active_resources{type}` with its `_total` from one
 * `getActiveResourcesInfo()` per scrape (0.9 ms at 16,000 sockets). `nodejs_active_handles` is dropped: Node offers
 * no way to count handles but building an object per handle (4–5 ms per read at 16,000); the resources are its
 * successor.
 */
export function replaceWalkingGauges(registry: client.Registry<client.RegistryContentType>): void {
  for (const name of WALKING_GAUGES) registry.removeSingleMetric(name);
  if (process.platform === 'linux')
    new client.Gauge({
      name: 'process_open_fds',
      help: 'Number of open file descriptors.',
      registers: [registry],
      async collect() {
        const n = await openFds();
        if (n !== null) this.set(n);
      },
    });
  // one reading serves both gauges of a scrape: the per-type one is collected first (registration order)
  let last = { at: -Infinity, total: 0 };
  const resources = new client.Gauge({
    name: 'nodejs_active_resources',
    help: 'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.',
    labelNames: ['type'],
    registers: [registry],
    collect() {
      const counts = new Map<string, number>();
      for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
      resources.reset();
      for (const [type, n] of counts) resources.set({ type }, n);
      last = { at: performance.now(), total: [...counts.values()].reduce((a, b) => a + b, 0) };
    },
  });
  new client.Gauge({
    name: 'nodejs_active_resources_total',
    help: 'Total number of active resources.',
    registers: [registry],
    collect() {
      this.set(performance.now() - last.at < 100 ? last.total : process.getActiveResourcesInfo().length);
    },
  });
}
