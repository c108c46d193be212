import type { Redis } from 'ioredis';

/**
 * Fans out "new events" notifications of many runs over one pub/sub connection per process. Listeners re-read the
 * run's events from their last seq, so a lost or coalesced notification never loses an event.
 */
export class EventHub {
  private readonly listeners = new Map<string, Set<() => void>>();

  constructor(private readonly sub: Redis) {
    sub.on('message', (channel: string) => {
      for (const l of this.listeners.get(channel) ?? []) l();
    });
  }

  async subscribe(channel: string, listener: () => void): Promise<() => Promise<void>> {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      await this.sub.subscribe(channel);
    }
    set.add(listener);
    return async () => {
      const s = this.listeners.get(channel);
      if (!s) return;
      s.delete(listener);
      if (!s.size) {
        this.listeners.delete(channel);
        await this.sub.unsubscribe(channel).catch(() => {});
      }
    };
  }
}
