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
 */
export class ToolCatalog {
  private cache: { at: number; entries: Map<string, CatalogEntry> } | null = null;
  /** The read in flight: the many callers that find the cache expired at once share one HGETALL. */
  private loading: Promise<Map<string, CatalogEntry>> | null = null;

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

  async all(): Promise<Map<string, CatalogEntry>> {
    if (this.cache && Date.now() - this.cache.at < this.ttlMs) return this.cache.entries;
    this.loading ??= this.load().finally(() => (this.loading = null));
    return this.loading;
  }

  private async load(): Promise<Map<string, CatalogEntry>> {
    const raw = await this.redis.hgetall(this.key);
    const entries = new Map<string, CatalogEntry>();
    for (const [name, json] of Object.entries(raw)) {
      const p = CatalogEntrySchema.safeParse(JSON.parse(json));
      if (p.success) entries.set(name, p.data);
    }
    this.cache = { at: Date.now(), entries };
    return entries;
  }

  async get(name: string): Promise<CatalogEntry | undefined> {
    return (await this.all()).get(name);
  }
}
