import type { ToolRegistry } from '../registry.js';
import type { ToolDefinition } from '../tool-definition.js';
import { resolveEnvRefs, type McpServerConfig } from './config.js';
import { McpServerConnection, type ServerConnectionOptions } from './server-connection.js';
import { catalogName, inputSchemaOf, sideEffectOf, type McpToolInfo } from './tool-mapping.js';
import { StdioServerRecord, reapOrphanedServers } from './orphans.js';

type Log = ServerConnectionOptions['logger'] & { error: (o: object, m: string) => void };

/** A tool's input schema goes into every model request that offers it: one larger than this is left out. */
const MAX_SCHEMA_CHARS = 65_536;

export interface McpToolsOptions {
  logger: Log;
  environment?: Record<string, string | undefined>;
  stderr?: ServerConnectionOptions['stderr'];
  backoffMs?: number;
}

/**
 * The tools of the MCP servers (SPEC §6) a tool-runner serves: one connection per server of its pools, and each
 * server's tools as definitions for its ToolRegistry. A server down keeps the tools it last listed.
 */
export class McpTools {
  private readonly connections: McpServerConnection[] = [];
  /** Catalog names by server and tool, kept across refreshes so that a name never changes while the process lives. */
  private readonly names = new Map<string, string>();
  private readonly defs = new Map<string, ToolDefinition[]>();
  private registry: ToolRegistry | null = null;
  private publish: () => Promise<void> = async () => undefined;
  private readonly record = new StdioServerRecord();

  private constructor(private readonly o: McpToolsOptions) {}

  /**
   * Connects to the servers of `pools` and lists their tools. A server naming an unset variable is not started; one
   * that cannot be reached has no tools in the catalog until it is (both logged, neither stops the process).
   */
  static async start(
    servers: McpServerConfig[],
    pools: (pool: string) => boolean,
    o: McpToolsOptions,
  ): Promise<McpTools> {
    const self = new McpTools(o);
    // stdio servers a runner killed with kill -9 left running (most end with their stdin; not all)
    reapOrphanedServers((fields, msg) => o.logger.warn(fields, msg));
    await Promise.all(servers.filter((s) => pools(s.pool)).map((s) => self.startServer(s)));
    return self;
  }

  private async startServer(configured: McpServerConfig): Promise<void> {
    const { server, missing } = resolveEnvRefs(configured, this.o.environment ?? process.env);
    if (missing.length) {
      this.o.logger.error(
        { mcpServer: server.name, missing },
        'MCP server not started: it names environment variables that are not set',
      );
      return;
    }
    let started = false;
    const conn = new McpServerConnection(server, {
      logger: this.o.logger,
      stderr: this.o.stderr,
      backoffMs: this.o.backoffMs,
      record: this.record,
      onTools: (tools) => {
        const before = this.defs.get(server.name) ?? [];
        const defs = this.definitions(server, tools, conn);
        this.defs.set(server.name, defs);
        if (started) this.replace(server.name, before, defs);
      },
    });
    this.connections.push(conn);
    try {
      await conn.connect();
    } catch (e) {
      this.o.logger.error(
        { mcpServer: server.name, err: e instanceof Error ? e.message : String(e) },
        'MCP server unreachable at start: its tools are unknown and not in the catalog until it answers',
      );
      conn.scheduleReconnect(); // its tools join through onChange when it answers
    }
    started = true;
  }

  private definitions(server: McpServerConfig, tools: McpToolInfo[], conn: McpServerConnection): ToolDefinition[] {
    const listed = tools.filter(
      (t) => (!server.allowTools || server.allowTools.includes(t.name)) && !server.denyTools.includes(t.name),
    );
    const tooLarge = listed.filter((t) => JSON.stringify(t.inputSchema ?? {}).length > MAX_SCHEMA_CHARS);
    if (tooLarge.length)
      this.o.logger.error(
        { mcpServer: server.name, tools: tooLarge.map((t) => t.name.slice(0, 100)).slice(0, 10) },
        `MCP server: input schemas over ${MAX_SCHEMA_CHARS} characters; those tools are left out`,
      );
    const taken = new Set([...this.names.values(), ...(this.registry?.all().map((t) => t.entry.name) ?? [])]);
    return listed
      .filter((t) => !tooLarge.includes(t))
      .map((t) => {
        const key = `${server.name}\0${t.name}`;
        let name = this.names.get(key);
        if (!name) {
          name = catalogName(server.name, t.name, taken);
          this.names.set(key, name);
          taken.add(name);
        }
        return {
          name,
          description: t.description ?? '',
          parameters: inputSchemaOf(t.inputSchema),
          ...sideEffectOf(server.trust, t.annotations),
          pool: server.pool,
          timeoutMs: server.timeoutMs,
          execute: (args, ctx) => conn.callTool(t.name, args, ctx.signal, server.timeoutMs),
        };
      });
  }

  /**
   * Adds the servers' tools to `registry`; a server's tools listed again later (tools/list_changed, a reconnect)
   * replace its earlier ones there, and `publish` puts the registry in the catalog again.
   */
  attach(registry: ToolRegistry, publish: () => Promise<void>): void {
    this.registry = registry;
    this.publish = publish;
    for (const [server, defs] of this.defs) this.register(server, defs);
    registry.setUnavailable((name) => {
      const server = this.connections.find(
        (c) => !this.defs.has(c.server.name) && name.startsWith(`${c.server.name}__`),
      )?.server.name;
      return (
        server &&
        `the MCP server ${server} has not answered since this tool-runner started: its tools are not known yet`
      );
    });
  }

  private replace(server: string, before: ToolDefinition[], defs: ToolDefinition[]): void {
    if (!this.registry) return;
    this.registry.remove(before.map((d) => d.name));
    this.register(server, defs);
    this.publish().catch((e: unknown) =>
      this.o.logger.error(
        { mcpServer: server, err: e instanceof Error ? e.message : String(e) },
        'MCP server: could not publish its tools',
      ),
    );
  }

  /** Adds a server's tools one by one: one the registry refuses (its schema, a name taken) is left out and logged. */
  private register(server: string, defs: ToolDefinition[]): void {
    for (const d of defs)
      try {
        this.registry!.add(d);
      } catch (e) {
        this.o.logger.error(
          { mcpServer: server, tool: d.name, err: (e instanceof Error ? e.message : String(e)).slice(0, 500) },
          'MCP server: a tool it lists cannot be registered; left out',
        );
      }
  }

  /** Every tool the servers listed so far. */
  all(): ToolDefinition[] {
    return [...this.defs.values()].flat();
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
    this.record.close();
  }
}
