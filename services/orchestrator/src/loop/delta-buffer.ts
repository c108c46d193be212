import type { NewEvent } from '@agentloop/protocol';

/**
 * Coalesces streamed text and reasoning deltas into few events: flushed every `intervalMs` or when `maxChars`
 * accumulate, in order, one write at a time. What is still buffered when the response completes is handed to the
 * checkpoint (`drain`), so a fast response costs no separate write at all.
 */
export class DeltaBuffer {
  private pending: NewEvent[] = [];
  private chars = 0;
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private written = false;
  /** The first write that failed: later writes are skipped, and drain() / flush() report it. */
  private failure: unknown = null;
  /** The call's output is not to be recorded (its predicted start did not hold): nothing is written, nothing drained. */
  private dropped = false;

  /**
   * `hold`: no write before it resolves, and none at all when it resolves false (a model call that went out before its
   * start was confirmed: ModelStep).
   */
  constructor(
    private readonly iteration: number,
    private readonly write: (events: NewEvent[], first: boolean) => Promise<unknown>,
    private readonly intervalMs = 40,
    private readonly maxChars = 4000,
    hold?: Promise<boolean>,
  ) {
    if (hold) this.chain = hold.then((ok) => void (this.dropped = !ok));
  }

  text(t: string): void {
    this.add('message.delta', t);
  }

  reasoning(t: string): void {
    this.add('reasoning.delta', t);
  }

  private add(type: 'message.delta' | 'reasoning.delta', text: string): void {
    const last = this.pending[this.pending.length - 1];
    if (last && last.type === type) (last.data as { text: string }).text += text;
    else this.pending.push({ type, data: { iteration: this.iteration, text } });
    this.chars += text.length;
    if (this.chars >= this.maxChars) this.schedule();
    else if (!this.timer) this.timer = setTimeout(() => this.schedule(), this.intervalMs);
  }

  private take(): NewEvent[] {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    this.chars = 0;
    return batch;
  }

  /** Queues a write of what is buffered; never rejects (a failure is kept for flush() and drain()). */
  private schedule(): void {
    const batch = this.take();
    if (!batch.length || this.failure) return;
    const first = !this.written;
    this.written = true;
    this.chain = this.chain.then(async () => {
      if (this.failure || this.dropped) return;
      try {
        await this.write(batch, first);
      } catch (e) {
        this.failure = e;
      }
    });
  }

  /** Writes what is buffered; resolves when everything added so far is written, rejects if a write failed. */
  async flush(): Promise<void> {
    this.schedule();
    await this.chain;
    if (this.failure) throw this.failure;
  }

  /**
   * Waits for writes in flight and returns what is still buffered, for the caller to write with its own step.
   * Rejects when a write failed: the deltas can no longer be trusted to be in the log, so the step must not go on.
   */
  async drain(): Promise<NewEvent[]> {
    await this.chain;
    if (this.failure) throw this.failure;
    const rest = this.take();
    return this.dropped ? [] : rest;
  }

  /** Drops what is buffered and not yet written (the call is being restarted or failed). */
  discard(): void {
    this.take();
  }
}
