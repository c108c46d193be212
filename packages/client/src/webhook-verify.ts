import { WebhookEventBodySchema, type WebhookEventBody } from '@agentloop/protocol';

/** A webhook request's headers: a fetch `Headers`, or Node's `req.headers` (lower-case names, string or string[]). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface WebhookVerifyOptions {
  /** How far `webhook-timestamp` may be from now, either way, in seconds [300, as Standard Webhooks' libraries]. */
  toleranceS?: number;
  /** The clock, in ms since the epoch [Date.now]. */
  now?: () => number;
}

/** The request is not a genuine, fresh webhook of this secret's deployment: answer it 4xx and do not act on it. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

async function verify(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  opts: WebhookVerifyOptions = {},
): Promise<WebhookEventBody> {
  const { toleranceS = 300, now = Date.now } = opts;
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not unix seconds');
  const ageS = Math.floor(now() / 1000) - Number(timestamp);
  if (ageS > toleranceS)
    throw new WebhookVerificationError(`webhook-timestamp is ${ageS} s old (tolerance ${toleranceS} s)`);
  if (-ageS > toleranceS)
    throw new WebhookVerificationError(`webhook-timestamp is ${-ageS} s in the future (tolerance ${toleranceS} s)`);

  const bodyBytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const signed = concat(new TextEncoder().encode(`${id}.${timestamp}.`), bodyBytes);
  const key = await globalThis.crypto.subtle.importKey(
    'raw',
    secretBytes(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const expected = new Uint8Array(await globalThis.crypto.subtle.sign('HMAC', key, signed));
  const matches = signatures.split(' ').some((s) => {
    const [version, b64] = s.split(',', 2);
    const given = version === 'v1' && b64 ? base64Bytes(b64) : null;
    return given !== null && constantTimeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError('no webhook-signature matches the body and this secret');

  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bodyBytes));
  } catch {
    throw new WebhookVerificationError('the signed body is not JSON');
  }
  const checked = WebhookEventBodySchema.safeParse(parsed);
  if (!checked.success)
    throw new WebhookVerificationError(
      `the signed body is not an agentloop webhook: ${checked.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return parsed as WebhookEventBody;
}

/** Webhook receivers' helpers. */
export interface Webhooks {
  /**
   * Checks a webhook request as a receiver gets it (Standard Webhooks, SPEC §2 Webhooks) and returns its parsed body.
   * `secret` is the tenant's `whsec_...` secret; `body` the raw body exactly as received (bytes or text: parsed and
   * re-serialized JSON does not verify). The signature is HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`,
   * compared in constant time with each `v1,` signature of `webhook-signature` (several during a secret rotation); a
   * timestamp further than `toleranceS` from now is refused, so a captured request cannot be replayed later. Throws
   * WebhookVerificationError; the caller should also drop a `webhook-id` it has already handled (a retry repeats it).
   */
  verify(
    secret: string,
    headers: WebhookHeaders,
    body: string | Uint8Array,
    opts?: WebhookVerifyOptions,
  ): Promise<WebhookEventBody>;
}

/** `webhooks.verify(secret, headers, body)`: see Webhooks. */
export const webhooks: Webhooks = { verify };

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value.join(' ') : value;
}

/** The key: the base64 after `whsec_` (a secret without the prefix is taken as base64 too, as Standard Webhooks does). */
function secretBytes(secret: string): Uint8Array<ArrayBuffer> {
  const bytes = base64Bytes(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
  if (!bytes?.length) throw new TypeError('the webhook secret is not whsec_ followed by base64');
  return bytes;
}

function base64Bytes(b64: string): Uint8Array<ArrayBuffer> | null {
  try {
    return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** Compares every byte whatever the first difference, so the time taken does not tell how much of a forgery was right. */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}
