const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/**
 * Random bytes drawn a pool at a time: one getRandomValues per ~200 ids (a call per id cost ~10× more). Ids only,
 * never secrets. Web Crypto (Node 24 and browsers alike), so the protocol loads in a browser bundle.
 */
const pool = new Uint8Array(4096);
let used = pool.length;

export function randomToken(length: number): string {
  if (!Number.isInteger(length) || length < 0 || length > pool.length)
    throw new RangeError(`randomToken: a length of 0 to ${pool.length} characters, not ${length}`);
  if (used + length > pool.length) {
    globalThis.crypto.getRandomValues(pool);
    used = 0;
  }
  let s = '';
  for (let i = 0; i < length; i++) s += ALPHABET[pool[used + i]! % ALPHABET.length];
  // every byte is used once
  used += length;
  return s;
}

export const newRunId = () => `run_${randomToken(20)}`;
/** Ids for tool calls the provider gave none: unique within the run and across providers. */
export const newCallId = () => `call_${randomToken(24)}`;

/** What a stored call id may look like: safe in job ids (toolJobId), hash fields (`<callId>:out`) and keys. */
export const SAFE_CALL_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
