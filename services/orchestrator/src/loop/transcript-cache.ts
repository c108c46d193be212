import type { Message } from '@agentloop/protocol';
import type { RunStore } from '@agentloop/runtime';

/**
 * The transcripts of recently advanced runs, kept in memory and extended with only the messages appended since
 * (the transcript is append-only), so an iteration reads O(new messages) from Redis, not the whole conversation.
 */
export class TranscriptCache {
  private readonly entries = new Map<string, Message[]>();

  constructor(
    private readonly store: RunStore,
    private readonly maxRuns = 2000,
  ) {}

  async get(runId: string): Promise<Message[]> {
    let msgs = this.entries.get(runId);
    if (msgs) this.entries.delete(runId); // re-inserted below: Map order = recency
    else msgs = [];
    const fresh = await this.store.messages(runId, msgs.length);
    if (fresh.length) msgs = msgs.concat(fresh);
    this.entries.set(runId, msgs);
    if (this.entries.size > this.maxRuns) this.entries.delete(this.entries.keys().next().value!);
    return msgs;
  }

  forget(runId: string): void {
    this.entries.delete(runId);
  }
}
