import type { Logger } from 'pino';

type Closer = { name: string; close: () => Promise<void> };

/** Ordered shutdown: workers stop first (drain), connections last. */
export class Shutdown {
  private readonly closers: Closer[] = [];
  private started: Promise<void> | null = null;

  constructor(private readonly logger: Logger) {}

  add(name: string, close: () => Promise<void>): void {
    this.closers.push({ name, close });
  }

  run(deadlineMs: number): Promise<void> {
    if (this.started) return this.started;
    this.started = (async () => {
      const timer = setTimeout(() => {
        this.logger.warn({ deadlineMs }, 'drain deadline passed, exiting');
        process.exit(0);
      }, deadlineMs + 2000);
      timer.unref();
      for (const c of [...this.closers].reverse()) {
        try {
          const t0 = Date.now();
          await c.close();
          this.logger.debug({ what: c.name, ms: Date.now() - t0 }, 'closed');
        } catch (e) {
          this.logger.warn({ err: e, what: c.name }, 'error while closing');
        }
      }
      clearTimeout(timer);
    })();
    return this.started;
  }
}
