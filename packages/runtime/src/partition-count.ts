import type { Redis } from 'ioredis';
import type { DeploymentKeys } from '@agentloop/protocol';

/** How often a process reads the deployment's partition count; a smaller one is adopted over twice this. */
export const COUNT_WATCH_MS = 5_000;

/**
 * Adopts a process's partition count as the deployment's (partition 0's `partitions` key). More partitions are adopted
 * at once: runs stay where they are and new runs spread over all. Fewer are announced first — every process reads the
 * count (Partitions.watchCount) and places no new run in the partitions being dropped — and adopted once those owe
 * nothing (`owedIn`: live runs, outbox entries, webhook deliveries) twice a watch period after the announcement;
 * otherwise the answer is the reason this process must not start yet: it would orphan those runs. Started again
 * later (a restart loop does), it adopts the count once they have drained. A larger count started meanwhile takes
 * the announcement back. (Finished runs of a dropped partition are no longer served; their keys expire with their
 * retention.)
 */
export async function adoptPartitionCount(
  redis: Redis,
  keys: DeploymentKeys,
  count: number,
  owedIn: (partition: number) => Promise<number>,
  settleMs = 2 * COUNT_WATCH_MS,
): Promise<string | null> {
  const stored = Number((await redis.get(keys.partitionCount)) ?? 1);
  const before = Number.isInteger(stored) && stored >= 1 ? stored : 1;
  if (count >= before) {
    if (count > before) await redis.set(keys.partitionCount, String(count));
    return null;
  }
  const owed = async () => {
    for (let p = count; p < before; p++) {
      const n = await owedIn(p);
      if (n > 0) return { p, n };
    }
    return null;
  };
  const refuse = (o: { p: number; n: number }) =>
    `AGENTLOOP_PARTITIONS=${count}, but partition ${o.p} of the ${before} this deployment ran with still owes ${o.n} live run(s), outbox entries or webhook deliveries: no new run goes past partition ${count - 1} from now on; start this process again once they have ended (docs/OPERATIONS.md, Partitions)`;
  const early = await owed();
  await redis.set(keys.partitionCount, String(count)); // the announcement: processes stop placing runs past it
  if (early) return refuse(early);
  await new Promise((r) => setTimeout(r, settleMs)); // a run placed before a process read the announcement shows by now
  const late = await owed();
  return late ? refuse(late) : null;
}
