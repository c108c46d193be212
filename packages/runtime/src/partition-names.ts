import { newRunId, randomToken } from '@agentloop/protocol';
import type { RedisTarget } from './redis-target.js';

/** AGENTLOOP_PARTITIONS is 1 to this. */
export const MAX_PARTITIONS = 64;

/**
 * The prefix each partition's keys and queues live under (SPEC §1). Partition 0 keeps the deployment's own prefix, so
 * one partition is exactly the layout of a deployment without partitions, and runs created before partitions stay
 * where they are; partition p ≥ 1 lives under `<prefix>-<p>`. In cluster mode each is its own hash tag
 * (`{agentloop-2}`): a partition's keys share one slot, and partitions land on different shards.
 */
export function partitionPrefixes(prefix: string, target: RedisTarget, count: number): string[] {
  return Array.from({ length: count }, (_, p) => partitionPrefix(prefix, target, p));
}

/** Partition p's prefix (partitionPrefixes). */
export function partitionPrefix(prefix: string, target: RedisTarget, p: number): string {
  const name = p === 0 ? prefix : `${prefix}-${p}`;
  return target.kind === 'cluster' ? `{${name}}` : name;
}

/** A run id this product drew for partition 0 (and every id it drew before partitions). */
const DRAWN = /^run_[A-Za-z0-9]{20}$/;
/** A run id this product drew for partition p ≥ 1: the partition is part of the id, whatever the count becomes. */
const DRAWN_IN = /^run_p([1-9]\d?)_[A-Za-z0-9]{20}$/;

/** A new run id of partition p. */
export function newRunIdIn(p: number): string {
  return p === 0 ? newRunId() : `run_p${p}_${randomToken(20)}`;
}

/** 32-bit FNV-1a of a string's UTF-16 units: stable across processes and builds. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** Where a key of the deployment's choosing (a thread, an idempotency key, a run id given at queue intake) hashes to. */
export function hashPartition(key: string, count: number): number {
  return count === 1 ? 0 : fnv1a(key) % count;
}

/**
 * The partition a run id names: the one it was drawn for, or (an id given at queue intake) the one it hashes to.
 * A drawn id names its partition under any partition count; a given id is placed by its thread when it has one, and
 * hashes elsewhere once the count changes, so it is looked for in the other partitions too (Partitions.locate).
 */
export function homePartition(runId: string, count: number): number {
  if (count === 1) return 0;
  const m = DRAWN_IN.exec(runId);
  if (m) return Number(m[1]) < count ? Number(m[1]) : hashPartition(runId, count);
  return DRAWN.test(runId) ? 0 : hashPartition(runId, count);
}
