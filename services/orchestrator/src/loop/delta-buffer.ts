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

  constructor(
    private readonly iteration: number,
    private readonly write: (events: NewEvent[], first: boolean) => Promise<unknown>,
    private readonly intervalMs = 40,
    private readonly maxChars = 4000,
  ) {}

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
    if (this.chars >= this.maxChars) void this.flush();
    else if (!this.timer) this.timer = setTimeout(() => void this.flush(), this.intervalMs);
  }

  private take(): NewEvent[] {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    this.chars = 0;
    return batch;
  }

  /** Writes what is buffered; resolves when everything added so far is written. */
  flush(): Promise<void> {
    const batch = this.take();
    if (batch.length) {
      const first = !this.written;
      this.written = true;
      this.chain = this.chain.then(() => this.write(batch, first)).then(() => undefined);
    }
    return this.chain;
  }

  /** Waits for writes in flight and returns what is still buffered, for the caller to write with its own step. */
  async drain(): Promise<NewEvent[]> {
    await this.chain;
    return this.take();
  }

  /** Drops what is buffered and not yet written (the call is being restarted or failed). */
  discard(): void {
    this.take();
  }
}
