import type { Message } from '@agentloop/protocol';
import type { RunStore } from '@agentloop/runtime';

/**
 * The transcripts of recently advanced runs, kept in memory. The transcript is append-only, so the cache is
 * extended with what this process appended (the start-iteration script returns the messages it added, the
 * checkpoint adds the assistant message) and read from Redis only from the first index it lacks — an iteration's
 * cost does not grow with the conversation.
 */
export class TranscriptCache {
  private readonly entries = new Map<string, Message[]>();

  constructor(
    private readonly store: RunStore,
    private readonly maxRuns = 2000,
  ) {}

  /** The transcript; `knownLength` (from a script that just wrote it) lets a consistent cache skip Redis entirely. */
  async get(runId: string, knownLength?: number): Promise<Message[]> {
    let msgs = this.entries.get(runId);
    if (msgs) this.entries.delete(runId); // re-inserted below: Map order = recency
    else msgs = [];
    if (knownLength === undefined || msgs.length !== knownLength) {
      if (knownLength !== undefined && msgs.length > knownLength) msgs = [];
      const fresh = await this.store.messages(runId, msgs.length);
      if (fresh.length) msgs = msgs.concat(fresh);
    }
    this.entries.set(runId, msgs);
    if (this.entries.size > this.maxRuns) this.entries.delete(this.entries.keys().next().value!);
    return msgs;
  }

  /** Messages this process appended at the end of the list (now `length` long); an inconsistent entry is dropped. */
  appended(runId: string, length: number, messages: readonly Message[]): void {
    const cached = this.entries.get(runId);
    if (!cached) return;
    if (cached.length + messages.length === length) cached.push(...messages);
    else this.entries.delete(runId);
  }

  forget(runId: string): void {
    this.entries.delete(runId);
  }
}
