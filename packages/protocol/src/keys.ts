/**
 * The Redis key layout, in one place. Every key starts with the deployment prefix; a run's keys carry the
 * run id in a hash tag so that they share one Redis Cluster slot and one Lua script may touch them all.
 */
import { RunStatusSchema } from './snapshot.js';

export const SCHEMA_VERSION = 1;

/** The statuses whose tenant index a status change moves a run between, in the order of runStatusScript's keys. */
export const INDEXED_STATUSES = RunStatusSchema.options;
/** How many keys every run script takes (DeploymentKeys.runScript). */
export const RUN_SCRIPT_KEYS = 10;
/** How many keys a run script that may change the run's status takes (DeploymentKeys.runStatusScript). */
export const RUN_STATUS_SCRIPT_KEYS = RUN_SCRIPT_KEYS + 1 + INDEXED_STATUSES.length + 1;

export const QUEUES = {
  requests: 'requests',
  orchestrator: 'orchestrator',
  decisions: 'decisions',
  compressor: 'compressor',
  /** One job per run created by queue intake, when it ends (job id = run id): SPEC §2. */
  results: 'results',
  /** Webhook deliveries (SPEC §2): one `deliver` job per run at a time (webhookJobId). */
  webhooks: 'webhooks',
  tools: (pool: string) => `tools-${pool}`,
} as const;

export class RunKeys {
  readonly state: string;
  readonly messages: string;
  readonly eventsChannel: string;
  readonly compressions: string;
  /** Runs with `notify` only: the delivery log (hash; lua/enqueueWebhook-10.lua lists its fields). */
  readonly webhooks: string;

  constructor(
    readonly prefix: string,
    readonly runId: string,
  ) {
    const base = `${prefix}:run:{${runId}}`;
    this.state = base;
    this.messages = `${base}:msgs`;
    this.eventsChannel = `${base}:ev`;
    this.compressions = `${base}:compressions`;
    this.webhooks = `${base}:webhooks`;
  }
}

/**
 * A placeholder key of a run's own (the same slot as its state): declared where a script takes a key the run may not
 * have (no idempotency key, no thread), and never touched.
 */
export function runPlaceholder(k: RunKeys, what: string): string {
  return `${k.state}:${what}`;
}

/** Runs whose keys a process keeps built (each step of a run names them two or three times). */
const RUN_KEYS_KEPT = 4096;

/**
 * The key space: every Redis key name of a deployment is built here, and every key a Lua script touches is declared in
 * its KEYS by the lists below (runScript, runStatusScript), never derived inside the script. Redis Cluster needs
 * exactly this. A partition (AGENTLOOP_PARTITIONS) is a key space of its own, under its own prefix and hash tag.
 */
export class DeploymentKeys {
  private readonly runs = new Map<string, RunKeys>();

  constructor(readonly prefix: string) {}

  /**
   * Every key a run script touches (lua/common.lua, KEYS[1..10]): the run's state, transcript, compressions and
   * webhook log, then the deployment's indexes its steps keep — parked, resuming, queued and running runs, the
   * retention schedule and the outbox.
   */
  runScript(runId: string): string[] {
    const k = this.run(runId);
    return [
      k.state,
      k.messages,
      k.compressions,
      k.webhooks,
      this.parkedRuns,
      this.resumingRuns,
      this.queuedRuns,
      this.runningRuns,
      this.retention,
      this.outbox,
    ];
  }

  /**
   * The keys of a run script that may change the run's status (KEYS[11..18] after runScript's): the tenant's run
   * index, its index per status (INDEXED_STATUSES order), and the run's idempotency key (`idemKey`, the name its
   * state's `idem` field holds; '' = none: a placeholder).
   */
  runStatusScript(runId: string, tenant: string, idemKey: string): string[] {
    return [
      ...this.runScript(runId),
      this.tenantRuns(tenant),
      ...INDEXED_STATUSES.map((s) => this.tenantRunsByStatus(tenant, s)),
      idemKey || runPlaceholder(this.run(runId), 'noidem'),
    ];
  }
  /** The tenant's runs (zset, score = createdAt ms), kept by createRun. */
  tenantRuns(tenantId: string): string {
    return `${this.prefix}:tenant:${tenantId}:runs`;
  }
  /** The tenant's runs in one status (zset, score = createdAt ms); moved atomically with the status field. */
  tenantRunsByStatus(tenantId: string, status: string): string {
    return `${this.prefix}:tenant:${tenantId}:runs:${status}`;
  }
  /** Held while a run of the tenant is created with an activeRuns limit and more than one partition (Partitions). */
  tenantCreating(tenantId: string): string {
    return `${this.prefix}:tenant:${tenantId}:creating`;
  }
  /** The tenant's request token bucket (AGENTLOOP_TENANT_LIMITS requestsPerSecond). */
  tenantBucket(tenantId: string): string {
    return `${this.prefix}:tenant:${tenantId}:bucket`;
  }
  /** The tenant's open event streams (zset: lease id → expiry ms; AGENTLOOP_TENANT_LIMITS streams). */
  tenantStreams(tenantId: string): string {
    return `${this.prefix}:tenant:${tenantId}:streams`;
  }
  /** Finished runs scored by when they expire, member `<runId>|<tenant>`: the sweeper drops their index entries. */
  get retention(): string {
    return `${this.prefix}:retention`;
  }
  /**
   * With partitions (partition 0's keys): which partition a given run id, a tenant's idempotency key or a tenant's
   * thread was placed in (a string, the partition's index), so every later request for it goes there.
   */
  placement(kind: 'run', runId: string): string;
  placement(kind: 'idem' | 'thread', tenantId: string, id: string): string;
  placement(kind: 'run' | 'idem' | 'thread', ...parts: string[]): string {
    return `${this.prefix}:place:${kind}:${parts.join(':')}`;
  }
  idempotency(tenantId: string, key: string): string {
    return `${this.prefix}:idem:${tenantId}:${key}`;
  }
  /** Pub/sub channel on which cancellations are broadcast to every process (aborts streams and tools). */
  get cancelChannel(): string {
    return `${this.prefix}:cancel`;
  }
  /** Runs parked for a decision, scored by expiry (the parked gauge is its size). */
  get parkedRuns(): string {
    return `${this.prefix}:parked`;
  }
  /** Runs in status queued, by creation time: the intake reconciler's work list. */
  get queuedRuns(): string {
    return `${this.prefix}:queued`;
  }
  /** Runs in status running, by the time they became so: the live-run reconciler's work list. */
  get runningRuns(): string {
    return `${this.prefix}:running`;
  }
  /**
   * A tenant's thread (SPEC §2 Threads): its hash (`active` run, `tenant`), and beside it `:runs` (every run, oldest
   * first), `:msgs` (the conversation so far) and `:waiting` (runs queued behind the active one).
   */
  thread(tenantId: string, threadId: string): { hash: string; runs: string; messages: string; waiting: string } {
    const hash = `${this.prefix}:thread:${tenantId}:${threadId}`;
    return { hash, runs: `${hash}:runs`, messages: `${hash}:msgs`, waiting: `${hash}:waiting` };
  }
  /** The model providers the orchestrators can call (ProviderCatalog: provider → lease expiry ms). */
  get providers(): string {
    return `${this.prefix}:providers`;
  }
  /** What runs tell the outside world, written with the transitions they report (lua/common.lua toOutbox). */
  get outbox(): string {
    return `${this.prefix}:outbox`;
  }
  /** Outbox entries the relay took and has not finished (re-read by the next relay after a crash). */
  get outboxTaken(): string {
    return `${this.prefix}:outbox:taken`;
  }
  /** Held by the process relaying the outbox (one at a time, so entries keep their order). */
  get outboxLease(): string {
    return `${this.prefix}:outbox:lease`;
  }
  /** Set once a start found no live run stored in a layout other than `layout`: later starts skip that scan. */
  /** The deployment's partition count (partition 0's hash: `count` new runs go to, `span` that may hold runs). */
  get partitionCount(): string {
    return `${this.prefix}:partitions`;
  }
  layoutChecked(layout: string): string {
    return `${this.prefix}:layout-checked:${layout}`;
  }
  /** Held by the process sweeping the live runs this period (one sweep per deployment at a time). */
  get reconcileLease(): string {
    return `${this.prefix}:reconcile`;
  }
  /** Runs whose decisions are complete and whose resume is being published (a reconciler re-publishes stragglers). */
  get resumingRuns(): string {
    return `${this.prefix}:resuming`;
  }
  /** The tool catalog (hash: tool name → entry JSON), published by tool-runners, read by the api and orchestrators. */
  get toolCatalog(): string {
    return `${this.prefix}:tools`;
  }
  run(runId: string): RunKeys {
    let k = this.runs.get(runId);
    if (!k) {
      k = new RunKeys(this.prefix, runId);
      // an id from a request path may be anything: only ids of a run's length are kept, so the map stays small
      if (runId.length <= 64) {
        if (this.runs.size >= RUN_KEYS_KEPT) this.runs.clear();
        this.runs.set(runId, k);
      }
    }
    return k;
  }
  /** Model calls in flight to a provider, scored by lease expiry (per-provider concurrency limit). */
  providerInflight(provider: string): string {
    return `${this.prefix}:llm:{${provider}}:inflight`;
  }
  /** The provider's rate limiter state (GCRA theoretical arrival time, ms). */
  providerRate(provider: string): string {
    return `${this.prefix}:llm:{${provider}}:tat`;
  }
}
