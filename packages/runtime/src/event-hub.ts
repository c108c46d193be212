import type { Redis } from 'ioredis';

/** One subscribed channel: its listeners, and its SUBSCRIBE (every subscriber waits for it). */
interface Channel {
  listeners: Set<() => void>;
  ready: Promise<unknown>;
}

/**
 * Fans out "new events" notifications of many runs over one pub/sub connection per process. Listeners re-read the
 * run's events from their last seq, so a lost or coalesced notification never loses an event.
 */
export class EventHub {
  private readonly channels = new Map<string, Channel>();

  constructor(private readonly sub: Redis) {
    sub.on('message', (channel: string) => {
      for (const l of this.channels.get(channel)?.listeners ?? []) l();
    });
  }

  /**
   * Adds a listener of `channel`; resolves, once the channel is subscribed, to the function that removes it (it
   * unsubscribes the channel with its last listener; calling it again does nothing). A failed SUBSCRIBE rejects
   * every subscriber waiting for it and leaves nothing behind.
   */
  async subscribe(channel: string, listener: () => void): Promise<() => Promise<void>> {
    let ch = this.channels.get(channel);
    if (!ch) {
      ch = { listeners: new Set(), ready: this.sub.subscribe(channel) };
      this.channels.set(channel, ch);
    }
    const own = ch;
    const entry = () => listener(); // (its own identity: the same function may listen twice)
    own.listeners.add(entry);
    let removed = false;
    const unsubscribe = async () => {
      if (removed) return;
      removed = true;
      if (this.channels.get(channel) !== own || !own.listeners.delete(entry) || own.listeners.size) return;
      this.channels.delete(channel);
      await this.sub.unsubscribe(channel).catch(() => {});
    };
    try {
      await own.ready;
    } catch (err) {
      removed = true;
      if (this.channels.get(channel) === own) this.channels.delete(channel);
      throw err;
    }
    return unsubscribe;
  }
}
