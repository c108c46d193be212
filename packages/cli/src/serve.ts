import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EndpointPolicy, PriceTable, ProviderRegistry, slotGate } from '@agentloop/llm';
import { CompressorWorker } from '@agentloop/compressor';
import {
  RunIntake,
  ServerEventStreams,
  WebhookPolicy,
  adminRouter,
  createApp,
  loadBullBoard,
  type IterationWorkerOptions,
} from '@agentloop/orchestrator';
import { QUEUES } from '@agentloop/protocol';
import {
  EventHub,
  Metrics,
  ProviderLimiter,
  RetentionSweeper,
  Shutdown,
  ProviderCatalog,
  TenantLimiter,
  ToolCatalog,
  createLogger,
  startTracing,
  tracingState,
  createRedis,
  drainAll,
  commandConnection,
  loadConfig,
  notReadyReason,
  type Config,
  type Drainable,
} from '@agentloop/runtime';
import { createMetricsServer } from './metrics-server.js';
import { isolationLimits, parseMcpServers, parseOpenApiTools } from '@agentloop/tool-runner';
import { closeServer, displayHost, listen } from './http-server.js';
import { openPartitions } from './open-partitions.js';
import { startOrchestratorRole } from './orchestrator-role.js';
import type { ProcessParts } from './process-parts.js';
import { updateQueueGauges } from './queue-gauges.js';
import { startToolRunnerRole } from './tool-runner-role.js';

export const ROLES = ['api', 'orchestrator', 'tool-runner', 'compressor'] as const;
export type Role = (typeof ROLES)[number];

export interface ServeOptions {
  roles: Role[];
  /** Tool pools this process executes (tool-runner role); default: every pool of its registry. */
  pools?: string[];
  /** The partitions whose runs this process's workers serve (`--partitions 0,2`) [every partition]; the api serves all. */
  partitions?: number[];
  env?: Record<string, string | undefined>;
  /** Benchmarks: per-iteration timings of this process's orchestrator. */
  onIterationTimed?: IterationWorkerOptions['onIterationTimed'];
  /** Replay tests: the orchestrator's pure deciders, wrapped by a recorder of histories. */
  planner?: IterationWorkerOptions['planner'];
}

export interface RunningProcess {
  config: Config;
  apiUrl: string | null;
  metricsUrl: string;
  stop(): Promise<void>;
}

/** Starts the given roles in this process, sharing its Redis connections (commands, pub/sub, job publishing), one metrics registry, one shutdown. */
export async function serve(opts: ServeOptions): Promise<RunningProcess> {
  const config = loadConfig(opts.env ?? process.env);
  const mcpServers = parseMcpServers(config.mcpServers); // every role: a mistake stops the deployment at once
  const openapiTools = parseOpenApiTools(config.openapiTools);
  const isolation = isolationLimits(opts.env ?? process.env); // AGENTLOOP_ISOLATION_MEMORY_MB, likewise
  const logger = createLogger(config.logLevel, { roles: opts.roles.join(',') });
  for (const warning of config.warnings) logger.warn(warning);
  if (opts.roles.includes('api') && config.authRequired && config.apiKeys.size === 0) {
    const message =
      'AGENTLOOP_AUTH=required and AGENTLOOP_API_KEYS is empty: every API request will be answered 401. Set AGENTLOOP_API_KEYS=key=tenant,... (or AGENTLOOP_AUTH=disabled for a local demo)';
    logger.warn(message);
    console.error(`agentloop: ${message}`); // whatever LOG_LEVEL says
  }
  if (!config.authRequired)
    logger.warn('AGENTLOOP_AUTH=disabled: every request is accepted as tenant "default" — for local demos only');
  // every connection from the one factory (REDIS_URL, Sentinel or Cluster); in cluster mode config.prefix is the
  // deployment's hash tag, so every key below shares one slot
  const redis = commandConnection(createRedis(config.redis, 'agentloop-cmd', logger));
  const subscriber = commandConnection(createRedis(config.redis, 'agentloop-sub', logger));
  // a 'message' listener per worker that aborts on cancellation, per partition it serves (and the event hub's)
  subscriber.setMaxListeners(0);
  // the job publishers' own connection: ioredis copies every script defined on a connection into each MULTI it
  // starts (BullMQ adds a flow in one), and the run scripts on `redis` made that a fifth of the MULTI's cost
  const publisher = commandConnection(createRedis(config.redis, 'agentloop-pub', logger));
  const shutdown = new Shutdown(logger);
  // SPEC §8: the SDK is loaded only when an OTLP endpoint is set; closed last, after the workers drained
  const tracing = await startTracing(opts.env ?? process.env, { 'agentloop.roles': opts.roles.join(',') }, (m) =>
    logger.warn(m),
  );
  shutdown.add('tracing', () => tracing.shutdown());
  shutdown.add('redis', async () => {
    await Promise.allSettled([redis.quit(), subscriber.quit(), publisher.quit()]);
  });
  const metrics = new Metrics({ exemplars: tracingState.on });
  const catalog = new ToolCatalog(redis, config.prefix); // one catalog for every partition
  const { partitions, served } = await openPartitions(
    config,
    { redis, publisher },
    { catalog, metrics },
    opts.partitions,
  ).catch(async (e: unknown) => {
    await Promise.allSettled([redis.quit(), subscriber.quit(), publisher.quit()]);
    throw e;
  });
  const store = partitions.all[0]!.store; // partition 0: the deployment's own prefix, where what spans partitions lives
  shutdown.add('queues', async () => {
    partitions.stopWatching();
    await Promise.all(partitions.all.map((p) => p.queues.close()));
  });
  const endpoints = new EndpointPolicy(config.modelBaseUrls, config.modelKeyEnvs);
  const prices = new PriceTable(config.modelPrices);
  const tenantLimiter = Object.keys(config.tenantLimits).length
    ? new TenantLimiter(redis, config.prefix, config.tenantLimits)
    : null;
  const providerCatalog = new ProviderCatalog(redis, store.keys);
  const webhooks = new WebhookPolicy(config.webhooks);
  const newIntake = () =>
    new RunIntake(partitions, catalog, metrics, {
      endpoints,
      prices,
      limits: tenantLimiter,
      providers: providerCatalog,
      webhooks,
    });
  const newProviders = () =>
    new ProviderRegistry(config.providers, endpoints, { warn: (message, fields) => logger.warn(fields, message) });
  const has = (r: Role) => opts.roles.includes(r);
  // behind Sentinel a retry:"never" call starts only once a replica has its start (a failover cannot lose it)
  const replicaAck = config.redis.kind === 'sentinel' ? { replicas: 1, timeoutMs: 1000 } : undefined;
  // before any worker takes a job: a deployment that asked for Bull Board and cannot load it stops here
  const bullBoard = has('api') && config.adminKey ? await loadBullBoard() : null;
  // Workers drain together under one deadline (SPEC §1), after the HTTP server stops and before connections close.
  const workers: Array<{ role: Role; worker: Drainable }> = [];
  const addWorkers = (role: Role, ...ws: Drainable[]) => workers.push(...ws.map((worker) => ({ role, worker })));
  shutdown.add('workers', () =>
    drainAll(
      workers.map((w) => w.worker),
      config.drainMs,
    ),
  );
  // readiness (/readyz on the api port, or on the metrics port): the connections, then every role's workers
  const ready = async () =>
    notReadyReason(
      [redis, subscriber, publisher],
      workers.map(({ role, worker }) => ({ role, isRunning: () => worker.isRunning() })),
    );
  const started: string[] = [];
  const parts: ProcessParts = {
    config,
    env: opts.env ?? process.env,
    logger,
    redis,
    subscriber,
    partitions,
    served,
    metrics,
    isolation,
    replicaAck,
  };

  if (has('tool-runner')) {
    addWorkers('tool-runner', await startToolRunnerRole(parts, { pools: opts.pools, mcpServers, openapiTools }));
    started.push('tool-runner');
  }
  // per-provider limits hold back every model call of the deployment: the loop's and the compressor's summaries
  const limiter = new ProviderLimiter(redis, config.prefix, config.providerLimits);
  const gate = Object.keys(config.providerLimits).length
    ? slotGate((p) => limiter.tryAcquire(p), {
        onThrottled: (provider, limit) => metrics.llmThrottled.inc({ provider, limit }),
      })
    : undefined;
  if (has('orchestrator')) {
    const { onIterationTimed, planner } = opts;
    const roleParts = {
      providerCatalog,
      newProviders,
      newIntake,
      catalog,
      webhooks,
      gate,
      prices,
      onIterationTimed,
      planner,
    };
    await startOrchestratorRole(parts, roleParts, (...ws) => addWorkers('orchestrator', ...ws));
    started.push('orchestrator');
  }
  if (has('compressor')) {
    const providers = newProviders();
    for (const p of served) {
      const compressor = new CompressorWorker({
        redis,
        prefix: p.prefix,
        store: p.store,
        providers,
        metrics,
        logger,
        lockMs: config.lockMs,
        prices,
        compressionModel: config.compressionModel ?? undefined,
        gate,
      });
      await compressor.start();
      addWorkers('compressor', compressor);
    }
    started.push('compressor');
  }

  const metricsText = async () => {
    await updateQueueGauges(metrics, partitions.all, catalog).catch((err) =>
      logger.warn({ err }, 'queue gauges unavailable'),
    );
    return metrics.text();
  };
  let apiUrl: string | null = null;
  let metricsUrl: string;
  if (has('api')) {
    const hub = new EventHub(subscriber);
    let admin;
    if (config.adminKey) {
      const pools = [...new Set([...(await catalog.all()).values()].map((t) => t.pool))];
      // partition 0's queues with the ones every partition shares (requests, decisions), the others' own queues
      const shared: string[] = [QUEUES.requests, QUEUES.decisions];
      const boardQueues = partitions.all.flatMap((p) => [
        ...p.queues.known().filter((q) => p.index === 0 || !shared.includes(q.name)),
        ...pools.map((pool) => p.queues.get(QUEUES.tools(pool))),
      ]);
      admin = adminRouter(bullBoard!, boardQueues, {
        key: config.adminKey,
        writable: config.adminWritable,
      });
    }
    const eventStreams = new ServerEventStreams();
    const app = createApp({
      admin,
      eventStreams,
      partitions,
      hub,
      catalog,
      logger,
      apiKeys: config.apiKeys,
      authRequired: config.authRequired,
      metricsText,
      metricsContentType: metrics.contentType,
      intake: newIntake(),
      limiter: tenantLimiter,
      corsOrigins: config.corsOrigins,
      console: { traceUrl: config.consoleTraceUrl },
      metrics,
      ready,
    });
    const server = http.createServer(app);
    server.keepAliveTimeout = 65_000;
    await listen(server, config.port, config.host);
    const port = (server.address() as AddressInfo).port;
    apiUrl = `http://${displayHost(config.host)}:${port}`;
    metricsUrl = `${apiUrl}/metrics`;
    shutdown.add('http', async () => {
      const closed = closeServer(server); // stops accepting first: a client that reconnects goes to another api
      eventStreams.endAll();
      await closed;
    });
    // retention: finished runs' keys expire by themselves; their index entries are swept here
    const sweepers = partitions.all.map((p) => new RetentionSweeper(redis, p.prefix));
    for (const sweeper of sweepers)
      sweeper.start(Math.min(60_000, Math.max(1000, config.runRetentionS * 100)), (err) =>
        logger.warn({ err }, 'retention sweep failed'),
      );
    shutdown.add('retention', async () => sweepers.forEach((s) => s.stop()));
    started.unshift('api');
    console.log(`agentloop api listening on ${apiUrl}`);
  } else {
    const server = createMetricsServer({ metricsText, contentType: metrics.contentType, ready });
    await listen(server, config.metricsPort, config.host);
    metricsUrl = `http://${displayHost(config.host)}:${(server.address() as AddressInfo).port}/metrics`;
    shutdown.add('metrics-http', () => closeServer(server));
  }
  console.log(`agentloop ready roles=${started.join(',')} metrics=${metricsUrl}`);
  return { config, apiUrl, metricsUrl, stop: () => shutdown.run(config.drainMs) };
}
