import { LOCAL_POOL } from '@agentloop/protocol';
import {
  McpTools,
  ToolRegistry,
  ToolRunner,
  startOpenApiTools,
  type McpServerConfig,
  type OpenApiToolsConfig,
} from '@agentloop/tool-runner';
import type { RunScheduler } from '@agentloop/runtime';
import type { ProcessParts } from './process-parts.js';

/** The tool-runner role: the registry's tools but the local ones, its OpenAPI operations and MCP servers, for the pools it serves. */
export async function startToolRunnerRole(
  parts: ProcessParts,
  o: { pools?: string[]; mcpServers: McpServerConfig[]; openapiTools: OpenApiToolsConfig[]; scheduler: RunScheduler },
): Promise<ToolRunner> {
  const { config, logger, redis, subscriber, store, metrics, replicaAck } = parts;
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
  const runner = new ToolRunner({
    redis,
    subscriber,
    store,
    registry,
    metrics,
    logger,
    prefix: config.prefix,
    pools,
    concurrency: config.toolConcurrency,
    lockMs: config.lockMs,
    closeAfter: () => mcp.close(),
    replicaAck,
    scheduler: o.scheduler,
  });
  mcp.attach(registry, () => runner.publishCatalog());
  // a runner that cannot start leaves no MCP server child behind
  await runner.start().catch(async (e: unknown) => {
    await mcp.close();
    throw e;
  });
  return runner;
}
