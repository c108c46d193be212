import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function randomToken(length: number): string {
  const bytes = randomBytes(length);
  let s = '';
  for (let i = 0; i < length; i++) s += ALPHABET[bytes[i]! % ALPHABET.length];
  return s;
}

export const newRunId = () => `run_${randomToken(20)}`;
/** Ids for tool calls the provider gave none: unique within the run and across providers. */
export const newCallId = () => `call_${randomToken(24)}`;

/** What a stored call id may look like: safe in job ids (`<runId>-<callId>`), hash fields (`<callId>:out`) and keys. */
export const SAFE_CALL_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
