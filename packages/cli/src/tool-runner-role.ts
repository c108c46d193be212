import { LOCAL_POOL } from '@agentloop/protocol';
import {
  McpTools,
  ToolRegistry,
  ToolRunner,
  startOpenApiTools,
  type McpServerConfig,
  type OpenApiToolsConfig,
} from '@agentloop/tool-runner';
import { drainGroup, type Drainable } from '@agentloop/runtime';
import type { ProcessParts } from './process-parts.js';

/**
 * The tool-runner role: the registry's tools but the local ones, its OpenAPI operations and MCP servers, for the pools
 * it serves, in each partition it serves (one runner each, sharing the registry and the MCP servers).
 */
export async function startToolRunnerRole(
  parts: ProcessParts,
  o: { pools?: string[]; mcpServers: McpServerConfig[]; openapiTools: OpenApiToolsConfig[] },
): Promise<Drainable> {
  const { config, logger, redis, subscriber, metrics, replicaAck } = parts;
  const { mcpServers, openapiTools } = o;
  // local tools are the orchestrators' (one home per tool): a runner serves the rest
  const registry = (await ToolRegistry.withModules(config.toolModules, config.localTools, parts.isolation)).only(
    (pool) => pool !== LOCAL_POOL,
  );
  const pools = o.pools?.length
    ? o.pools
    : [...new Set([...registry.pools(), ...mcpServers.map((s) => s.pool), ...openapiTools.map((e) => e.pool)])];
  // OpenAPI operations of this runner's pools: their documents are loaded now (one that cannot be stops the start)
  const serving = (pool: string) => pools.includes(pool);
  for (const def of await startOpenApiTools(openapiTools, serving, {
    logger,
    environment: parts.env,
    taken: registry.all().map((t) => t.entry.name),
  }))
    registry.add(def);
  // an MCP server's tools join the registry (and so the catalog this runner publishes)
  const mcp = await McpTools.start(mcpServers, serving, { logger, environment: parts.env });
  const runners = parts.served.map(
    (p) =>
      new ToolRunner({
        redis,
        subscriber,
        store: p.store,
        registry,
        metrics,
        logger,
        prefix: p.prefix,
        catalogPrefix: config.prefix,
        pools,
        concurrency: config.toolConcurrency,
        lockMs: config.lockMs,
        replicaAck,
        scheduler: p.scheduler,
      }),
  );
  mcp.attach(registry, () => runners[0]!.publishCatalog());
  // a runner that cannot start leaves no MCP server child behind
  await Promise.all(runners.map((r) => r.start())).catch(async (e: unknown) => {
    await Promise.allSettled(runners.map((r) => r.close()));
    await mcp.close();
    throw e;
  });
  // the MCP servers close after every runner's workers: calls in flight need them until then
  return drainGroup(runners, () => mcp.close());
}
