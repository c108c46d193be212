import { z } from 'zod';

/**
 * What every adapter reads off a provider's wire, checked: whatever a model (or the server in front of it) sends is
 * untrusted input (SPEC §3), and the SDKs only cast the JSON they parsed. A field of an unexpected type reads as
 * absent instead of failing the call (a call that throws is retried, billed again, and ends the run as a network
 * failure); null — which the APIs send for every unset field — is absent too.
 */
export const Str = z.string();
export const opt = <T extends z.ZodType>(t: T) => t.nullish().catch(undefined);

/** The longest model name a response may report: intake's bound on the names a request may ask for. */
const MAX_MODEL_NAME = 200;

/** A model name as a response reports it: a non-empty string within intake's bound, else absent. */
export const ModelName = opt(z.string().min(1).max(MAX_MODEL_NAME));

/**
 * A token count off the wire, as usage, budgets and the run's integer counters take it: a non-negative safe integer.
 * A number — or a string of digits, as some compatible servers send — is read (a fraction rounds up: a budget is
 * never under-counted); anything else, a negative count, or one past 2^53 (no server counts that far) is 0.
 */
export function tokenCount(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+(?:\.\d+)?\s*$/.test(v) ? Number(v) : NaN;
  if (!(n > 0)) return 0; // NaN, negative, zero
  const i = Math.ceil(n);
  return Number.isSafeInteger(i) ? i : 0;
}

/** A token-count field of a wire object: always a count (0 when absent or malformed). */
export const Count = z.unknown().optional().transform(tokenCount);

/** The same, absent (undefined) when the field is: for a count another field stands in for. */
export const MaybeCount = z
  .unknown()
  .optional()
  .transform((v) => (v === undefined || v === null ? undefined : tokenCount(v)));

/** The text of a value that was to be JSON text but came as JSON itself (a call's arguments as an object). */
export function jsonText(v: unknown): string {
  try {
    return JSON.stringify(v) ?? 'null';
  } catch {
    return 'null'; // nested past what the engine serializes: not an object the loop could run
  }
}
