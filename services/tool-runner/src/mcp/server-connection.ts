import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ToolFailure } from '../tool-definition.js';
import type { McpServerConfig } from './config.js';
import type { StdioServerRecord } from './orphans.js';
import { contentText, toolResultOf, type McpToolInfo } from './tool-mapping.js';

type Log = { info: (o: object, m: string) => void; warn: (o: object, m: string) => void };

export interface ServerConnectionOptions {
  logger: Log;
  /** Called with the server's tools each time it lists them (on connecting, and on notifications/tools/list_changed). */
  onTools: (tools: McpToolInfo[]) => void;
  /** What a stdio server's stderr goes to (default: this process's stderr). */
  stderr?: 'inherit' | 'ignore';
  /** First reconnect delay; doubles to at most 30 s. */
  backoffMs?: number;
  /** Where a stdio server's pid is kept while it runs (a runner killed with kill -9 leaves it to its successor). */
  record?: StdioServerRecord;
}

const MAX_BACKOFF_MS = 30_000;
/** A server's error text enters the transcript as the call's message: bounded like a thrown error's. */
const MAX_ERROR_CHARS = 4_000;
const VERSION = '0.1.0';

/**
 * A failure of the way to the server (not an answer of the server): the connection is dropped and made again, and the
 * call is answered retryable. Anything else — a malformed result the SDK refuses, a protocol error — reached the
 * server (the call may have run): a plain tool_error, and the connection stays.
 */
function isTransportFailure(e: unknown): boolean {
  if (e instanceof McpError) return e.code === ErrorCode.ConnectionClosed;
  if (e instanceof StreamableHTTPError) return true;
  const err = e as { code?: unknown; cause?: { code?: unknown } } | null;
  const code = err?.cause?.code ?? err?.code;
  if (typeof code === 'string' && /^E(CONN|PIPE|HOSTUNREACH|NETUNREACH|NOTFOUND|AI_AGAIN|TIMEDOUT)/.test(code))
    return true;
  return e instanceof Error && /fetch failed|not connected|connection closed|socket hang up/i.test(e.message);
}

/** Bounds of what a server lists (SPEC §6: whatever a server sends is checked): pages, tools, description length. */
const MAX_LIST_PAGES = 50;
const MAX_TOOLS = 500;
const MAX_DESCRIPTION_CHARS = 4_000;
/** Connecting and listing wait at most this long, whatever a call's timeoutMs (a start never waits a day). */
const MAX_CONNECT_MS = 15_000;
/** A connection that lived this long resets the backoff (a server that dies right after connecting keeps backing off). */
const STABLE_MS = 30_000;

/** A stale Streamable HTTP session: the reference server answers 400, the spec says 404. */
const isStaleSession = (e: unknown) => e instanceof StreamableHTTPError && (e.code === 404 || e.code === 400);

/**
 * One MCP server, for one tool-runner process: one connection, made when first needed, made again (with backoff)
 * after any transport failure, closed on drain (a stdio server — a child of this process — with it).
 */
export class McpServerConnection {
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private backoff: number;
  private retryAt = 0;
  private closed = false;

  constructor(
    readonly server: McpServerConfig,
    private readonly o: ServerConnectionOptions,
  ) {
    this.backoff = o.backoffMs ?? 1_000;
  }

  /**
   * Connects (when not connected) and lists the tools; throws when the server cannot be reached. After an attempt
   * that failed, calls do not try again before the backoff is over (`force`: the backoff timer's own attempt), so a
   * server that is down costs a call no connection attempt, and a crash-looping stdio server is not spawned per call.
   */
  connect(force = false): Promise<Client> {
    if (this.closed) return Promise.reject(new Error(`MCP server ${this.server.name} is closed`));
    if (this.client) return Promise.resolve(this.client);
    if (!this.connecting && !force && Date.now() < this.retryAt)
      return Promise.reject(new Error(`it did not answer; next attempt in ${this.retryAt - Date.now()} ms`));
    this.connecting ??= this.open()
      .catch((e: unknown) => {
        this.retryAt = Date.now() + this.backoff;
        throw e;
      })
      .finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async open(): Promise<Client> {
    const client = new Client({ name: 'agentloop-tool-runner', version: VERSION }, { capabilities: {} });
    const transport = this.server.command
      ? new StdioClientTransport({
          command: this.server.command,
          args: this.server.args,
          env: this.server.env,
          stderr: this.o.stderr ?? 'inherit',
        })
      : new StreamableHTTPClientTransport(new URL(this.server.url!), { requestInit: { headers: this.server.headers } });
    let connectedAt = 0;
    let pid: number | null = null;
    client.onclose = () => {
      this.o.record?.remove(pid);
      if (this.client !== client) return;
      this.client = null;
      if (Date.now() - connectedAt >= STABLE_MS) this.backoff = this.o.backoffMs ?? 1_000;
      if (!this.closed) {
        this.o.logger.warn({ mcpServer: this.server.name }, 'MCP server connection lost; reconnecting');
        this.scheduleReconnect();
      }
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.relist(client));
    client.onerror = (e) => this.onTransportError(client, e);
    try {
      const connecting = client.connect(transport, { timeout: Math.min(this.server.timeoutMs, MAX_CONNECT_MS) });
      // spawned by now (connect starts the transport first): kept while it starts, however long that takes
      if (transport instanceof StdioClientTransport) this.o.record?.add((pid = transport.pid));
      await connecting;
      await this.listTools(client);
    } catch (e) {
      await client.close().catch(() => undefined);
      throw e;
    }
    if (this.closed) {
      await client.close().catch(() => undefined);
      throw new Error(`MCP server ${this.server.name} is closed`);
    }
    this.client = client;
    connectedAt = Date.now();
    this.retryAt = 0;
    this.o.logger.info({ mcpServer: this.server.name }, 'MCP server connected');
    return client;
  }

  private async listTools(client: Client): Promise<void> {
    const tools: McpToolInfo[] = [];
    const cursors = new Set<string>();
    let cursor: string | undefined;
    for (let pages = 0; pages < MAX_LIST_PAGES && tools.length < MAX_TOOLS; pages++) {
      const page = await client.listTools(cursor ? { cursor } : undefined, {
        timeout: Math.min(this.server.timeoutMs, MAX_CONNECT_MS),
      });
      for (const t of page.tools.slice(0, MAX_TOOLS - tools.length))
        tools.push({
          name: t.name,
          description: t.description?.slice(0, MAX_DESCRIPTION_CHARS),
          inputSchema: t.inputSchema as Record<string, unknown>,
          annotations: t.annotations,
        });
      cursor = page.nextCursor;
      if (!cursor || cursors.has(cursor)) break; // a server repeating its cursor lists nothing new
      cursors.add(cursor);
    }
    this.o.onTools(tools);
  }

  private relisting: 'idle' | 'running' | 'again' = 'idle';

  /** tools/list_changed: one listing at a time, one more after it when notifications came meanwhile (in order). */
  private relist(client: Client): void {
    if (this.relisting !== 'idle') {
      this.relisting = 'again';
      return;
    }
    this.relisting = 'running';
    void this.listTools(client)
      .catch((e: unknown) =>
        this.o.logger.warn(
          { mcpServer: this.server.name, err: message(e) },
          'MCP server: could not list its tools after tools/list_changed',
        ),
      )
      .finally(() => {
        const again = this.relisting === 'again';
        this.relisting = 'idle';
        if (again && this.client === client) this.relist(client);
      });
  }

  private inFlight = 0;

  /**
   * A Streamable HTTP response stream cut mid-call (the server killed, the network gone): the SDK tries to resume it
   * and, when it cannot, only reports the error — the call would wait for its timeout. With calls in flight the
   * connection is closed instead: they fail at once as the way to the server failing (retryable), and the next call
   * connects again. (The SDK's resumption of a cut stream is given up for that.)
   */
  private onTransportError(client: Client, e: Error): void {
    if (
      this.client !== client ||
      !this.inFlight ||
      !/SSE stream disconnected|Maximum reconnection attempts|Failed to reconnect/.test(e.message)
    )
      return;
    this.o.logger.warn(
      { mcpServer: this.server.name, err: message(e) },
      'MCP server: a response stream was cut; closing the connection',
    );
    void client.close().catch(() => undefined);
  }

  /** Connects again after the backoff (a server that could not be reached, or whose connection was lost). */
  scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    const delay = this.backoff;
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect(true).catch((e: unknown) => {
        this.o.logger.warn(
          { mcpServer: this.server.name, err: message(e), retryInMs: this.backoff },
          'MCP server unreachable',
        );
        this.scheduleReconnect();
      });
    }, delay);
    this.retryTimer.unref();
  }

  /** Drops the connection after a transport failure; the next call (or the backoff timer) makes a new one. */
  private async drop(client: Client): Promise<void> {
    if (this.client === client) this.client = null;
    await client.close().catch(() => undefined);
  }

  /** `tools/call`: the result (SPEC §6), or a ToolFailure — retryable when the server could not be reached. */
  async callTool(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      let client: Client;
      try {
        client = await this.connect();
      } catch (e) {
        this.scheduleReconnect();
        throw this.unreachable(e);
      }
      this.inFlight++;
      try {
        const result = await client.callTool({ name: tool, arguments: args }, undefined, {
          signal,
          timeout: timeoutMs,
        });
        if (result.isError)
          throw new ToolFailure(
            'tool_error',
            contentText(result.content).slice(0, MAX_ERROR_CHARS) || `the MCP tool ${tool} reported an error`,
          );
        return toolResultOf(result as { structuredContent?: unknown; content?: unknown });
      } catch (e) {
        if (e instanceof ToolFailure || signal.aborted) throw e;
        if (!isTransportFailure(e)) throw new ToolFailure('tool_error', message(e));
        await this.drop(client);
        // the server refused the session, not the call: the call never ran, so it may go once more on a new session
        if (isStaleSession(e) && attempt === 0) {
          this.o.logger.info(
            { mcpServer: this.server.name, status: (e as StreamableHTTPError).code },
            'MCP server: session stale; initializing a new one',
          );
          continue;
        }
        this.scheduleReconnect();
        throw this.unreachable(e);
      } finally {
        this.inFlight--;
      }
    }
  }

  private unreachable(e: unknown): ToolFailure {
    return new ToolFailure(
      'tool_error',
      `the MCP server ${this.server.name} could not be reached: ${message(e)}`,
      true,
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const client = this.client ?? (await this.connecting?.catch(() => null)) ?? null;
    this.client = null;
    if (!client) return;
    const transport = client.transport;
    if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 500);
