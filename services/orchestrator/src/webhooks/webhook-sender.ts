import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { pinnedLookup, type ResolvedAddress } from '@agentloop/runtime';

/** What one attempt got: an answer (any status), or none (timeout, refused or reset connection). */
export type AttemptResult = { kind: 'answered'; status: number } | { kind: 'no_answer'; message: string };

/** Standard Webhooks: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` keyed with the secret's bytes. */
export function webhookSignature(secret: Buffer, id: string, timestampS: number, body: string): string {
  return `v1,${createHmac('sha256', secret).update(`${id}.${timestampS}.${body}`).digest('base64')}`;
}

export interface WebhookRequest {
  url: URL;
  /** The address the policy checked: the connection goes there, whatever the name resolves to now. */
  target: ResolvedAddress;
  id: string;
  body: string;
  secret: Buffer;
  /** How long the attempt may take, from connecting to the answer's status (AGENTLOOP_WEBHOOK_TIMEOUT_MS, SPEC §2: 10 s). */
  timeoutMs: number;
  /** Cuts the attempt short (the process hands its jobs back). */
  signal?: AbortSignal;
}

/**
 * POSTs one signed attempt (headers webhook-id, webhook-timestamp, webhook-signature). Redirects are not followed:
 * a 3xx is an answer like any other non-2xx. The answer's body is not waited for.
 */
export function sendWebhook(r: WebhookRequest): Promise<AttemptResult> {
  const timestampS = Math.floor(Date.now() / 1000);
  const signal = AbortSignal.any([AbortSignal.timeout(r.timeoutMs), ...(r.signal ? [r.signal] : [])]);
  return new Promise((resolve) => {
    const lib = r.url.protocol === 'https:' ? https : http;
    const req = lib.request(r.url, {
      method: 'POST',
      agent: false,
      signal,
      lookup: pinnedLookup(r.target),
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(r.body),
        'user-agent': 'agentloop-webhooks/1',
        'webhook-id': r.id,
        'webhook-timestamp': String(timestampS),
        'webhook-signature': webhookSignature(r.secret, r.id, timestampS, r.body),
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('error', () => {}); // a body cut by the timeout: the status was all it was asked for
      resolve({ kind: 'answered', status: res.statusCode ?? 0 });
    });
    req.on('error', (e) =>
      resolve({
        kind: 'no_answer',
        message: signal.aborted && !r.signal?.aborted ? `no answer within ${r.timeoutMs} ms` : e.message,
      }),
    );
    req.end(r.body);
  });
}
