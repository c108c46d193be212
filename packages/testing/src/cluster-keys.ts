import type { Cluster } from 'ioredis';

/** Every key of the cluster with `prefix` in its name, plain or hash-tagged, with its slot (scanned on each primary). */
export async function clusterKeysOf(conn: Cluster, prefix: string): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  await conn.ping(); // connected, so it knows the primaries
  for (const node of conn.nodes('master')) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000);
      for (const k of keys) found.set(k, Number(await node.call('CLUSTER', 'KEYSLOT', k)));
      cursor = next;
    } while (cursor !== '0');
  }
  return found;
}
