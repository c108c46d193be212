import type { Redis } from 'ioredis';
import type { DeploymentKeys } from '@agentloop/protocol';

/** How often a process reads the deployment's partition count; a smaller one is adopted over twice this. */
export const COUNT_WATCH_MS = 5_000;

/** The deployment's partition count as partition 0 keeps it (`<prefix>:partitions`, a hash). */
export interface StoredCount {
  /** How many partitions new runs go to (what a smaller count announces before it is adopted). */
  count: number;
  /** How many partitions may hold runs: the count adopted last (a smaller one only once the rest owed nothing). */
  span: number;
}

export async function storedCount(redis: Redis, keys: DeploymentKeys): Promise<StoredCount | null> {
  const [count, span] = (await redis.hmget(keys.partitionCount, 'count', 'span')).map(Number);
  const ok = (n: number | undefined): n is number => Number.isInteger(n) && n! >= 1;
  return ok(count) && ok(span) ? { count, span } : null;
}

/**
 * Adopts a process's partition count (`count`) as the deployment's. More partitions are adopted at once: runs stay
 * where they are and new runs spread over all. Fewer are announced first — every process reads the count
 * (Partitions.watchCount) and places no new run in the partitions being dropped — and adopted once those owe nothing
 * (`owedIn`: live runs, outbox entries, webhook deliveries) twice a watch period after the announcement; otherwise
 * the answer is the reason this process must not start yet: it would orphan those runs. Started again later (a
 * restart loop does), it checks again and adopts the count once they have drained. A larger count started meanwhile
 * takes the announcement back. (Finished runs of a dropped partition are no longer served; their keys expire with
 * their retention.)
 */
export async function adoptPartitionCount(
  redis: Redis,
  keys: DeploymentKeys,
  count: number,
  owedIn: (partition: number) => Promise<number>,
  settleMs = 2 * COUNT_WATCH_MS,
): Promise<string | null> {
  const span = (await storedCount(redis, keys))?.span ?? 1;
  if (count >= span) {
    await redis.hset(keys.partitionCount, 'count', count, 'span', count);
    return null;
  }
  const owed = async () => {
    for (let p = count; p < span; p++) {
      const n = await owedIn(p);
      if (n > 0) return { p, n };
    }
    return null;
  };
  const refuse = (o: { p: number; n: number }) =>
    `AGENTLOOP_PARTITIONS=${count}, but partition ${o.p} of the ${span} this deployment ran with still owes ${o.n} live run(s), outbox entries or webhook deliveries: no new run goes past partition ${count - 1} from now on; start this process again once they have ended (docs/OPERATIONS.md, Partitions)`;
  await redis.hset(keys.partitionCount, 'count', count); // the announcement: processes stop placing runs past it
  const early = await owed();
  if (early) return refuse(early);
  await new Promise((r) => setTimeout(r, settleMs)); // a run placed before a process read the announcement shows by now
  const late = await owed();
  if (late) return refuse(late);
  await redis.hset(keys.partitionCount, 'span', count);
  return null;
}
