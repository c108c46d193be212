import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** A request the receiver got. */
export interface Receipt {
  path: string;
  /** The Standard Webhooks headers. */
  headers: { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string };
  body: string;
  /** The body's `type`. */
  type: string;
  /** The run the body is about. */
  runId: string;
}

/** How the receiver answers a request: a status, or `hang` (it never answers). */
export type Answer = number | 'hang';

/**
 * A real HTTP server receiving webhooks (127.0.0.1, its own port), recording every request and answering as the test
 * says; it can go down and come back on the same port.
 */
export class WebhookReceiver {
  readonly receipts: Receipt[] = [];
  /** What to answer; 200 unless a test says otherwise. */
  answer: (r: Receipt) => Answer = () => 200;
  private server: http.Server | null = null;
  private port = 0;

  static async start(): Promise<WebhookReceiver> {
    const r = new WebhookReceiver();
    await r.up();
    return r;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}/`;
  }

  get portNumber(): number {
    return this.port;
  }

  /** The receipts about one run, in the order they came. */
  of(runId: string): Receipt[] {
    return this.receipts.filter((r) => r.runId === runId);
  }

  /** Listens (again, on the same port once it had one). */
  async up(): Promise<void> {
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        let parsed: { type?: string; data?: { runId?: string } } = {};
        try {
          parsed = JSON.parse(body);
        } catch {}
        const h = (n: string) => String(req.headers[n] ?? '');
        const receipt: Receipt = {
          path: req.url ?? '',
          body,
          type: parsed.type ?? '',
          runId: parsed.data?.runId ?? '',
          headers: {
            'webhook-id': h('webhook-id'),
            'webhook-timestamp': h('webhook-timestamp'),
            'webhook-signature': h('webhook-signature'),
          },
        };
        this.receipts.push(receipt);
        const answer = this.answer(receipt);
        if (answer !== 'hang') res.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and drops every connection (requests in flight get no answer). */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }

  /** Whether a receipt's signature verifies with the standardwebhooks library and `secret` (`whsec_…`). */
  static verifies(r: Receipt, secret: string): boolean {
    try {
      new Webhook(secret).verify(r.body, r.headers);
      return true;
    } catch {
      return false;
    }
  }
}
