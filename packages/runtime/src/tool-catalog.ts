import type { Redis } from 'ioredis';
import { z } from 'zod';
import { DeploymentKeys } from '@agentloop/protocol';

export const CatalogEntrySchema = z.object({
  name: z.string(),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
  sideEffect: z.enum(['read', 'reversible', 'external', 'critical']),
  pool: z.string(),
  timeoutMs: z.number().int().positive(),
  retry: z.enum(['safe', 'never']),
});
export type CatalogEntry = z.infer<typeof CatalogEntrySchema>;

/**
 * The deployment's tool catalog in Redis (hash `<prefix>:tools`): tool-runners publish the tools they execute,
 * the api and orchestrator read it (cached briefly), so no role needs the others' code or modules.
 *
 * The cache may predate a tool-runner's publish (it runs in another process): `lookup` and `get` read Redis again
 * when the cached view lacks a name they are asked for, so a tool published before a run was created is never
 * answered unknown. A miss costs one read; misses of the same moment share it.
 */
export class ToolCatalog {
  private cache: { at: number; entries: Map<string, CatalogEntry> } | null = null;
  /** The read in flight: the many callers that find the cache expired at once share one HGETALL. */
  private loading: Promise<Map<string, CatalogEntry>> | null = null;
  /** The re-read that misses asked for and that is not sent yet: misses until it is sent share it. */
  private rereading: Promise<Map<string, CatalogEntry>> | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly ttlMs = 2000,
  ) {}

  get key(): string {
    return new DeploymentKeys(this.prefix).toolCatalog;
  }

  async publish(entries: CatalogEntry[]): Promise<void> {
    if (!entries.length) return;
    await this.redis.hset(this.key, ...entries.flatMap((e) => [e.name, JSON.stringify(e)]));
    this.cache = null;
    this.loading = null; // a read in flight may predate this publish
  }

  /** The catalog, cached for `ttlMs`. */
  async all(): Promise<Map<string, CatalogEntry>> {
    if (this.cache && Date.now() - this.cache.at < this.ttlMs) return this.cache.entries;
    return this.loading ?? this.load();
  }

  /**
   * The catalog, with every one of `names` that Redis holds: when the cached view lacks one, the catalog is read
   * again (the result is the cache from then on). Callers answer from the view returned, never from another.
   */
  async lookup(names: Iterable<string>): Promise<Map<string, CatalogEntry>> {
    const view = await this.all();
    for (const name of names) if (!view.has(name)) return this.reread();
    return view;
  }

  async get(name: string): Promise<CatalogEntry | undefined> {
    return (await this.lookup([name])).get(name);
  }

  /**
   * A read sent after the caller's miss (a read already in flight may have been answered before what the caller
   * missed was published). It is sent once the current turn of the event loop ends, so the misses of one burst —
   * the calls of one response, many iterations at once — share it.
   */
  private reread(): Promise<Map<string, CatalogEntry>> {
    this.rereading ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.rereading = null;
      return this.load();
    });
    return this.rereading;
  }

  private load(): Promise<Map<string, CatalogEntry>> {
    const loading = this.read().finally(() => {
      if (this.loading === loading) this.loading = null;
    });
    this.loading = loading;
    return loading;
  }

  private async read(): Promise<Map<string, CatalogEntry>> {
    const raw = await this.redis.hgetall(this.key);
    const entries = new Map<string, CatalogEntry>();
    for (const [name, json] of Object.entries(raw)) {
      const p = CatalogEntrySchema.safeParse(JSON.parse(json));
      if (p.success) entries.set(name, p.data);
    }
    this.cache = { at: Date.now(), entries };
    return entries;
  }
}
