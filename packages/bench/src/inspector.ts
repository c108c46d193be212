import fs from 'node:fs';
import path from 'node:path';

/** Node's `--inspect` line on a child's stderr: the WebSocket URL of its inspector. */
export const INSPECTOR_URL = /Debugger listening on (ws:\/\/\S+)/;

export interface LiveHeap {
  /** V8's used heap right after a full collection (`Runtime.getHeapUsage().usedSize`), bytes. */
  usedB: number;
  /** The same before the collection: live objects and garbage not collected yet, as a metrics scrape sees it. */
  beforeB: number;
  /** How long the collection paused the process (the CDP call's round trip), ms. */
  pauseMs: number;
}

/**
 * A Chrome DevTools Protocol session with another process (its `--inspect` URL) over the global WebSocket: the
 * bench asks it for a full collection and the heap in use after it, or a heap snapshot. Nothing in the product is
 * changed for it; the process only runs with the inspector open on a loopback port.
 */
export async function connectInspector(url: string) {
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`inspector ${url}: could not connect`));
  });
  let nextId = 0;
  const pending = new Map<number, { resolve: (r: any) => void; reject: (e: Error) => void }>();
  const listeners = new Map<string, (params: any) => void>();
  ws.onmessage = (ev) => {
    const msg = JSON.parse(String(ev.data)) as {
      id?: number;
      result?: unknown;
      error?: { message: string };
      method?: string;
      params?: unknown;
    };
    if (msg.id === undefined) return void (msg.method && listeners.get(msg.method)?.(msg.params));
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.error) p?.reject(new Error(msg.error.message));
    else p?.resolve(msg.result);
  };
  const post = <T = any>(method: string, params?: object): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  const usedHeap = async () => (await post<{ usedSize: number }>('Runtime.getHeapUsage')).usedSize;
  return {
    post,
    /**
     * A full collection (`HeapProfiler.collectGarbage`, twice: the first one's finalizers and weak cells may free more
     * on the second), then the heap in use: what the process holds live, garbage excluded.
     */
    async liveHeap(): Promise<LiveHeap> {
      const beforeB = await usedHeap();
      const t0 = performance.now();
      await post('HeapProfiler.collectGarbage');
      await post('HeapProfiler.collectGarbage');
      const pauseMs = performance.now() - t0;
      return { usedB: await usedHeap(), beforeB, pauseMs };
    },
    /** `process.getActiveResourcesInfo()` counted by kind (sockets, timers, …): what the process holds open. */
    async resources(): Promise<Record<string, number>> {
      const r = await post<{ result: { value: string } }>('Runtime.evaluate', {
        expression: 'JSON.stringify(process.getActiveResourcesInfo())',
        returnByValue: true,
      });
      const counts: Record<string, number> = {};
      for (const kind of JSON.parse(r.result.value) as string[]) counts[kind] = (counts[kind] ?? 0) + 1;
      return counts;
    },
    /** A heap snapshot (collects garbage first) written to `file`, for DevTools' comparison view. */
    async snapshot(file: string): Promise<void> {
      const out = fs.openSync(file, 'w');
      listeners.set('HeapProfiler.addHeapSnapshotChunk', (p: { chunk: string }) => fs.writeSync(out, p.chunk));
      try {
        await post('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      } finally {
        listeners.delete('HeapProfiler.addHeapSnapshotChunk');
        fs.closeSync(out);
      }
    },
    /**
     * Starts V8's sampling profilers: allocations (every ~32 KB allocated, garbage included: where the young generation
     * fills from) and CPU; `stopProfiles` writes them to `dir` as `.heapprofile` and `.cpuprofile` for DevTools.
     */
    async startProfiles(): Promise<void> {
      await post('HeapProfiler.startSampling', {
        samplingInterval: 32768,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 1000 });
      await post('Profiler.start');
    },
    async stopProfiles(dir: string): Promise<void> {
      const heap = await post<{ profile: unknown }>('HeapProfiler.stopSampling');
      fs.writeFileSync(path.join(dir, 'load.heapprofile'), JSON.stringify(heap.profile));
      const cpu = await post<{ profile: unknown }>('Profiler.stop');
      fs.writeFileSync(path.join(dir, 'load.cpuprofile'), JSON.stringify(cpu.profile));
    },
    close: () => ws.close(),
  };
}

export type Inspector = Awaited<ReturnType<typeof connectInspector>>;
