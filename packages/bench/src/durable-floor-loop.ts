import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { RawCall, RawModel } from './raw-model-call.js';
import { LoopWorkers } from './loop-workers.js';

/**
 * The raw loop plus only what SPEC's durability asks of any implementation, each step as cheap as it can be: a run is
 * created over HTTP (a bare node:http handler, no framework, no validation) and stored before it is queued; each
 * iteration's start is one script (compare-and-set of the iteration, its event (in the state hash, as the product keeps it), the previous batch's results read
 * back and appended to the transcript — in place of the raw loop's getChildrenValues); the model's answer is stored
 * by one script before its calls are published (SPEC §3: a response is checkpointed before any effect); a tool job
 * reads its call's status before it executes (SPEC §6: a finished call never runs again) and records its result with
 * its event in one script. No planner, no checks, no metrics, no token counting, no ownership, no retention: what it
 * costs above the raw loop is the price of those round trips alone, the floor under the product's figures.
 */

const EVENT = (run: string, type: string, data: string) =>
  `{"runId":"${run}","type":"${type}","at":"${new Date().toISOString()}","data":${data}}`;

// A step's events are fields of the run's state hash (`e:<n>`, n counted by `seq`), written by the HSET that writes
// its state, as the product's layout 3 keeps them: one command less per step than a list of their own.
const LUA = {
  create: `redis.call('HSET', KEYS[1], 'status', 'queued', 'iteration', '0', 'phase', 'queued', 'seq', 1, 'e:1', ARGV[1])
redis.call('RPUSH', KEYS[2], unpack(ARGV, 2))
return 1`,
  start: `local st = redis.call('HMGET', KEYS[1], 'iteration', 'seq')
if tonumber(st[1]) ~= tonumber(ARGV[1]) - 1 then return false end
local seq = tonumber(st[2]) + 1
redis.call('HSET', KEYS[1], 'iteration', ARGV[1], 'phase', 'model', 'status', 'running', 'seq', seq, 'e:' .. seq, ARGV[2])
if #ARGV < 3 then return {} end
local out = redis.call('HMGET', KEYS[1], unpack(ARGV, 3))
redis.call('RPUSH', KEYS[2], unpack(out))
return out`,
  checkpoint: `local st = redis.call('HMGET', KEYS[1], 'iteration', 'phase', 'seq')
if st[1] ~= ARGV[1] or st[2] ~= 'model' then return false end
local seq = tonumber(st[3]) + 1
redis.call('HSET', KEYS[1], 'phase', ARGV[2], 'status', ARGV[3], 'batch', ARGV[4], 'seq', seq, 'e:' .. seq, ARGV[6])
redis.call('RPUSH', KEYS[2], ARGV[5])
return 1`,
  record: `local st = redis.call('HMGET', KEYS[1], ARGV[1], 'seq')
if st[1] then return 0 end
local seq = tonumber(st[2]) + 1
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], 'seq', seq, 'e:' .. seq, ARGV[3])
return 1`,
};

/** A call's field in its run's state hash: by iteration and position (Gemini's calls may carry no id). */
const callField = (iteration: number, index: number) => `call:${iteration}:${index}`;

type Caller = (...args: Array<string | number>) => Promise<unknown>;

interface RunState {
  conv: unknown[];
  calls: RawCall[];
  done: () => void;
}

/** Settles when the run answered; kept until the client that created the run has taken it. */
type Answered = Promise<void>;

export class DurableFloorLoop {
  private readonly runs = new Map<string, RunState>();
  private readonly answered = new Map<string, Answered>();
  private readonly store: Redis;
  private readonly agent = new http.Agent({ keepAlive: true });
  private readonly body: string;
  private readonly workers: LoopWorkers;
  private server: http.Server | null = null;
  private url = '';
  private n = 0;
  private readonly script: Record<keyof typeof LUA, Caller>;
  iterations = 0;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly model: RawModel,
    prior: ReadonlyArray<{ role: string; content: string }>,
    concurrency: { orchestrator: number; tools: number },
    /** Called each time a tool is executed (tests count them). */
    private readonly onExecute: () => void = () => {},
  ) {
    this.workers = new LoopWorkers(
      redis,
      prefix,
      { iter: 'floor-iter', tool: 'floor-tool' },
      concurrency,
      'floor loop',
    );
    this.store = redis.duplicate();
    const s = this.store as unknown as Record<string, Caller>;
    for (const [name, lua] of Object.entries(LUA))
      this.store.defineCommand(`floor_${name}`, { lua, numberOfKeys: name === 'record' ? 1 : 2 });
    this.script = {
      create: s.floor_create!.bind(this.store),
      start: s.floor_start!.bind(this.store),
      checkpoint: s.floor_checkpoint!.bind(this.store),
      record: s.floor_record!.bind(this.store),
    };
    this.body = JSON.stringify({ input: prior });
  }

  /** A run's keys: its state hash (with its events), its transcript. */
  keys(run: string): [string, string] {
    const k = `${this.prefix}:run:{${run}}`;
    return [k, `${k}:msgs`];
  }

  async start(): Promise<void> {
    await this.workers.start(
      (job) => this.iterate(job),
      (job: Job<{ run: string; field: string; call: RawCall }>) =>
        this.execute(job.data.run, job.data.field, job.data.call),
    );
    this.server = http.createServer((req, res) =>
      this.intake(req, res).catch((err: unknown) =>
        res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err)),
      ),
    );
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/runs`;
  }

  /** POST /runs: the run stored, then queued, then 202 with its id. */
  private async intake(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let text = '';
    req.setEncoding('utf8');
    for await (const chunk of req) text += chunk as string;
    const { input } = JSON.parse(text) as { input: Array<{ role: string; content: string }> };
    const id = `f${this.n++}`;
    await this.script.create(...this.keys(id), EVENT(id, 'run.queued', '{}'), ...input.map((m) => JSON.stringify(m)));
    const state: RunState = { conv: this.model.start(input), calls: [], done: () => {} };
    this.answered.set(id, new Promise<void>((resolve) => (state.done = resolve)));
    this.runs.set(id, state);
    await this.workers.first(id);
    const out = JSON.stringify({ id });
    res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) }).end(out);
  }

  async run(): Promise<void> {
    const { id } = (await postJson(this.url, this.body, this.agent)) as { id: string };
    await this.answered.get(id);
    this.answered.delete(id);
  }

  private async iterate(job: Job<{ run: string; k: number }>): Promise<void> {
    const { run, k } = job.data;
    const state = this.runs.get(run);
    if (!state) return;
    const outcomes = (await this.script.start(
      ...this.keys(run),
      k,
      EVENT(run, 'iteration.started', `{"iteration":${k}}`),
      ...state.calls.map((_, i) => callField(k - 1, i)),
    )) as string[] | null;
    if (!outcomes) return;
    if (state.calls.length)
      this.model.answer(
        state.conv,
        state.calls,
        outcomes.map((o) => JSON.parse((JSON.parse(o) as { content: string }).content) as unknown),
      );
    this.iterations++;
    const calls = await this.model.call(state.conv);
    state.calls = calls;
    const message = JSON.stringify(state.conv[state.conv.length - 1]);
    const events = calls.length
      ? [
          EVENT(run, 'iteration.completed', `{"iteration":${k}}`),
          ...calls.map((c) => EVENT(run, 'tool.call', `{"id":"${c.id}","status":"dispatched"}`)),
        ].join('\n')
      : [EVENT(run, 'iteration.completed', `{"iteration":${k}}`), EVENT(run, 'run.completed', '{}')].join('\n');
    await this.script.checkpoint(
      ...this.keys(run),
      k,
      calls.length ? 'tools' : 'done',
      calls.length ? 'running' : 'completed',
      JSON.stringify(calls.map((c) => c.id)),
      message,
      events,
    );
    if (!calls.length) {
      this.runs.delete(run);
      state.done();
      return;
    }
    await this.workers.next(
      run,
      k,
      calls.map((call, i) => ({ run, field: callField(k, i), call })),
    );
  }

  /** A tool job: the call's status read, the tool (a no-op), its result recorded as the transcript's tool message. */
  private async execute(run: string, field: string, call: RawCall): Promise<void> {
    const [state] = this.keys(run);
    if ((await this.store.hmget(state, field))[0] !== null) return; // finished: never executed again
    this.onExecute();
    const message = JSON.stringify({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ ok: true }) });
    await this.script.record(
      state,
      field,
      message,
      EVENT(run, 'tool.call', `{"id":"${call.id}","status":"completed"}`),
    );
  }

  /** The tool job of a run's last call delivered once more (tests: it must not execute the tool again). */
  async redeliverLastCall(run: string): Promise<void> {
    const stored = (await this.store.lrange(this.keys(run)[1], 0, -1)).map(
      (m) =>
        JSON.parse(m) as {
          role: string;
          tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
        },
    );
    const turns = stored.filter((m) => m.tool_calls?.length);
    const tc = turns.at(-1)!.tool_calls![0]!;
    await this.execute(run, callField(turns.length, 0), {
      id: tc.id,
      name: tc.function.name,
      arguments: tc.function.arguments,
    });
  }

  async close(): Promise<void> {
    this.agent.destroy();
    await new Promise((r) => this.server?.close(r));
    await this.workers.close();
    this.store.disconnect();
  }
}

/**
 * A kept-alive POST (node:http), as the product's bench client makes. A request on a reused socket that the server
 * closed meanwhile (its keep-alive timeout raced the request: under callgrind, pauses last seconds) is sent again
 * once, as node's documentation advises (`request.reusedSocket`).
 */
export async function postJson(url: string, body: string, agent: http.Agent): Promise<unknown> {
  try {
    return await postOnce(url, body, agent);
  } catch (err) {
    if (
      (err as { reusedSocket?: boolean; code?: string }).reusedSocket &&
      (err as { code?: string }).code === 'ECONNRESET'
    )
      return postOnce(url, body, agent);
    throw err;
  }
}

function postOnce(url: string, body: string, agent: http.Agent): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          res.statusCode === 202 || res.statusCode === 200
            ? resolve(JSON.parse(text))
            : reject(new Error(`POST ${url}: ${res.statusCode} ${text}`)),
        );
      },
    );
    req.on('error', (err) => reject(Object.assign(err, { reusedSocket: req.reusedSocket })));
    req.end(body);
  });
}
