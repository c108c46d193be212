import { type PriceTable, type ProviderGate, type ProviderRegistry } from '@agentloop/llm';
import {
  DecisionsWorker,
  IterationWorker,
  LiveRunReconciler,
  OutboxRelay,
  RequestsWorker,
  RunEnder,
  WebhookWorker,
  type IterationWorkerOptions,
  type RunIntake,
  type WebhookPolicy,
} from '@agentloop/orchestrator';
import { LOCAL_POOL } from '@agentloop/protocol';
import { PROVIDER_LEASE_MS, type Drainable, type ProviderCatalog, type ToolCatalog } from '@agentloop/runtime';
import { ToolRegistry, ToolRunner } from '@agentloop/tool-runner';
import type { ProcessParts } from './process-parts.js';

/** What the orchestrator role uses besides the process's shared parts. */
export interface OrchestratorRoleParts {
  providerCatalog: ProviderCatalog;
  newProviders: () => ProviderRegistry;
  newIntake: () => RunIntake;
  catalog: ToolCatalog;
  webhooks: WebhookPolicy;
  gate: ProviderGate | undefined;
  prices: PriceTable;
  onIterationTimed?: IterationWorkerOptions['onIterationTimed'];
  planner?: IterationWorkerOptions['planner'];
}

/**
 * The orchestrator role: in each partition it serves, the iteration worker (with the local tools), the live-run
 * reconciler, the outbox relay and webhook delivery; once for the deployment, queue intake and decisions (their queues
 * are one for every partition: each job goes on to its run's partition). Each worker is handed to `addWorkers` once
 * started.
 */
export async function startOrchestratorRole(
  parts: ProcessParts,
  o: OrchestratorRoleParts,
  addWorkers: (...ws: Drainable[]) => void,
): Promise<void> {
  const { config, logger, redis, subscriber, metrics, replicaAck, partitions, served } = parts;
  const { providerCatalog, catalog, webhooks, gate, prices } = o;
  const providers = o.newProviders();
  // which providers this orchestrator has keys for: the api refuses at intake a run none could call
  const configured = (['openai', 'google', 'deepseek'] as const).filter((p) => config.providers[p]?.apiKey);
  await providerCatalog.publish(configured);
  setInterval(() => void providerCatalog.publish(configured).catch(() => undefined), PROVIDER_LEASE_MS / 3).unref();
  // local tools (SPEC §6): run in the iteration that needs them; their resumed or re-dispatched calls come on
  // `tools-local`, which this process serves too
  const localRegistry = (await ToolRegistry.withModules(config.toolModules, config.localTools, parts.isolation)).only(
    (pool) => pool === LOCAL_POOL,
  );
  const sharedQueues = partitions.all[0]!.queues; // partition 0's, where `results` is: one for every partition
  for (const p of served) {
    const { store, scheduler, decisions } = p;
    const localTools = localRegistry.all().length
      ? new ToolRunner({
          redis,
          subscriber,
          store,
          registry: localRegistry,
          metrics,
          logger,
          prefix: p.prefix,
          catalogPrefix: config.prefix,
          pools: [LOCAL_POOL],
          concurrency: config.toolConcurrency,
          lockMs: config.lockMs,
          replicaAck,
          scheduler,
        })
      : undefined;
    if (localTools) {
      await localTools.start();
      addWorkers(localTools);
    }
    const worker = new IterationWorker({
      localTools,
      gate,
      redis,
      subscriber,
      store,
      scheduler,
      providers,
      metrics,
      logger,
      prefix: p.prefix,
      catalog,
      concurrency: config.orchestratorConcurrency,
      lockMs: config.lockMs,
      summaryDeadlineMs: config.summaryDeadlineMs,
      llmAttempts: config.llmAttempts,
      llmRetryBaseMs: config.llmRetryBaseMs,
      llmMaxWaitMs: config.llmMaxWaitMs,
      onIterationTimed: o.onIterationTimed,
      decisions,
      prices,
      ...(o.planner ? { planner: o.planner } : {}),
    });
    await worker.start();
    const reconciler = new LiveRunReconciler({
      store,
      scheduler,
      metrics,
      logger,
      everyMs: config.reconcileMs,
      poolPickupMs: config.poolPickupMs,
      end: new RunEnder(
        store,
        metrics,
        () => undefined,
        () => catalog.all(),
      ),
    });
    reconciler.start();
    const relay = new OutboxRelay(store, p.queues, logger, p.threads, scheduler, config.runRetentionS, sharedQueues);
    relay.start();
    const webhookWorker = new WebhookWorker({
      redis,
      prefix: p.prefix,
      store,
      queues: p.queues,
      policy: webhooks,
      metrics,
      logger,
      lockMs: config.lockMs,
    });
    await webhookWorker.start();
    addWorkers(worker, reconciler, relay, webhookWorker);
  }
  const intake = new RequestsWorker(redis, config.prefix, o.newIntake(), logger, config.reconcileMs, served);
  await intake.start();
  const decisionsWorker = new DecisionsWorker(redis, config.prefix, partitions, served, logger, config.reconcileMs);
  await decisionsWorker.start();
  addWorkers(intake, decisionsWorker);
}
