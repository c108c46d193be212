import {
  ThreadResponseSchema,
  ToolCatalogResponseSchema,
  type ThreadResponse,
  type ToolInfo,
} from '@agentloop/protocol';
import { HttpTransport, type ClientOptions, type RequestOptions } from './http-transport.js';
import { RunsApi } from './runs-api.js';
import { webhooks } from './webhook-verify.js';

// a thread's messages are not checked: they are the runs' stored transcripts
const ThreadChecked = ThreadResponseSchema.omit({ messages: true });

/** `client.threads` (SPEC §2, Threads). */
export interface ThreadsApi {
  /** `GET /v1/threads/:id`: the thread's runs, oldest first, and its conversation so far (404 for a thread with no run of yours). */
  get(threadId: string, opts?: RequestOptions): Promise<ThreadResponse>;
}

/** `client.tools`. */
export interface ToolsApi {
  /** `GET /v1/tools`: the tool catalog. */
  list(opts?: RequestOptions): Promise<ToolInfo[]>;
}

/**
 * The typed client of the agentloop HTTP API (SPEC §2), for backends, the CLI and browsers: fetch and Web APIs only.
 * Every refusal is thrown as an AgentloopError. Queue intake (`enqueueRun`, Node only) is in `@agentloop/client/queue`.
 *
 * ```ts
 * const client = new AgentloopClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: process.env.AGENTLOOP_API_KEY });
 * const { id } = await client.runs.create({ input: 'What is 17*23?', model: { provider: 'openai', name: 'gpt-4o-mini' }, tools: ['calculator'] });
 * for await (const e of client.runs.events(id)) if (e.type === 'message.delta') process.stdout.write(String(e.data.text));
 * ```
 */
export class AgentloopClient {
  private readonly http: HttpTransport;
  readonly runs: RunsApi;
  readonly threads: ThreadsApi;
  readonly tools: ToolsApi;
  /** A webhook receiver's helper (needs no client: `webhooks.verify` is exported on its own too). */
  readonly webhooks = webhooks;

  constructor(opts: ClientOptions) {
    const http = new HttpTransport(opts);
    this.http = http;
    this.runs = new RunsApi(http);
    this.threads = {
      get: (threadId, o = {}) =>
        http.json('GET', `/v1/threads/${encodeURIComponent(threadId)}`, ThreadChecked, {
          signal: o.signal,
        }) as Promise<ThreadResponse>,
    };
    this.tools = {
      list: async (o = {}) =>
        (await http.json('GET', '/v1/tools', ToolCatalogResponseSchema, { signal: o.signal })).data,
    };
  }

  /** The API's base URL, as given (without a trailing slash). */
  get baseUrl(): string {
    return this.http.baseUrl;
  }
}
