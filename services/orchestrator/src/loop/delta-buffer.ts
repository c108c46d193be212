import type { NewEvent } from '@agentloop/protocol';

/**
 * Coalesces streamed text and reasoning deltas into few events: flushed every `intervalMs` or when `maxChars`
 * accumulate, in order, one write at a time.
 */
export class DeltaBuffer {
  private pending: NewEvent[] = [];
  private chars = 0;
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  sent = false;

  constructor(
    private readonly iteration: number,
    private readonly write: (events: NewEvent[]) => Promise<unknown>,
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

  /** Writes what is buffered; resolves when everything added so far is written. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    this.chars = 0;
    if (batch.length) {
      this.sent = true;
      this.chain = this.chain.then(() => this.write(batch)).then(() => undefined);
    }
    return this.chain;
  }

  /** Drops what is buffered and not yet written (the call is being restarted). */
  discard(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.pending = [];
    this.chars = 0;
  }
}
