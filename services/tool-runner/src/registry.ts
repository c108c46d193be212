import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import { z } from 'zod';
import type { CatalogEntry } from '@agentloop/runtime';
import { calculator } from './builtins/calculator.js';
import { currentTime } from './builtins/current-time.js';
import { httpGet } from './builtins/http-get.js';
import { sleep } from './builtins/sleep.js';
import { LOCAL_POOL, LOCAL_TIMEOUT_MS } from '@agentloop/protocol';
import { ToolDefinitionSchema, type ToolDefinition, type ZodLike } from './tool-definition.js';
import { IsolatedModule, isolationLimits, type IsolationLimits } from './isolation/process-isolation.js';

export interface RegisteredTool {
  def: ToolDefinition;
  entry: CatalogEntry;
  /** Validates parsed arguments, filling in schema defaults in place (pass a value of your own); returns the value or the problems. */
  validate(args: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; problems: string[] };
}

/**
 * A read safe to retry: its start need not be recorded (its result step makes the start's checks), and a batch of
 * them may run before its checkpoint is confirmed (SPEC §6).
 */
export const isSafeRead = (t: RegisteredTool | undefined): boolean =>
  t?.entry.sideEffect === 'read' && t.entry.retry === 'safe';

/** How a load error names a definition: its name when it has a printable one, else its place in the array. */
const toolLabel = (d: unknown, i: number): string => {
  const name = (d as { name?: unknown } | null)?.name;
  return typeof name === 'string' && /^[\w.-]{1,64}$/.test(name) ? `tool ${name} (#${i})` : `tool #${i}`;
};

const isZod = (p: unknown): p is ZodLike => !!p && typeof (p as ZodLike).safeParse === 'function';

export const BUILTIN_TOOLS: ToolDefinition[] = [calculator, currentTime, httpGet, sleep];

/** The tools this process can execute: built-ins plus AGENTLOOP_TOOL_MODULES, each with a compiled validator. */
export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();
  private readonly ajv = new Ajv({ allErrors: true, strict: false, useDefaults: true });

  constructor(defs: ToolDefinition[] = BUILTIN_TOOLS) {
    for (const d of defs) this.add(d);
  }

  /**
   * Built-ins plus the modules' tools. `localBuiltins` (AGENTLOOP_LOCAL_TOOLS): built-ins that run locally, in the
   * orchestrator (pool `local`). A tool defined twice — a local built-in a module defines again, say — is refused: one
   * home per tool. A tool with `isolation: "process"` runs each call in a child process (`limits`: its heap,
   * AGENTLOOP_ISOLATION_MEMORY_MB); its definition is read here, like any tool's.
   */
  static async withModules(
    modulePaths: string[],
    localBuiltins: readonly string[] = [],
    limits: IsolationLimits = isolationLimits(process.env),
  ): Promise<ToolRegistry> {
    for (const name of localBuiltins)
      if (!BUILTIN_TOOLS.some((t) => t.name === name))
        throw new Error(
          `AGENTLOOP_LOCAL_TOOLS: '${name.slice(0, 64)}' is not a built-in tool (${BUILTIN_TOOLS.map((t) => t.name).join(', ')}); a module's tool is local with pool: "local"`,
        );
    const reg = new ToolRegistry(
      BUILTIN_TOOLS.map((t) =>
        localBuiltins.includes(t.name)
          ? { ...t, pool: LOCAL_POOL, timeoutMs: Math.min(t.timeoutMs ?? LOCAL_TIMEOUT_MS, LOCAL_TIMEOUT_MS) }
          : t,
      ),
    );
    for (const p of modulePaths) {
      let isolated: IsolatedModule | undefined;
      const mod = (await import(pathToFileURL(path.resolve(p)).href)) as { default?: unknown };
      if (!Array.isArray(mod.default))
        throw new Error(`tool module ${p}: the default export must be an array of tool definitions`);
      for (const [i, d] of mod.default.entries()) {
        const parsed = ToolDefinitionSchema.safeParse(d);
        if (!parsed.success)
          throw new Error(
            `tool module ${p}, ${toolLabel(d, i)}: ${parsed.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; ')}`,
          );
        if (parsed.data.isolation !== 'process') {
          reg.add(d as ToolDefinition);
          continue;
        }
        isolated ??= new IsolatedModule(path.resolve(p), limits);
        reg.add({ ...(d as ToolDefinition), execute: isolated.executor(parsed.data.name) });
      }
      if (isolated) reg.isolated.push(isolated);
    }
    return reg;
  }

  /** The tools of the pools `keep` accepts, as a registry of their own (a role serves its share of the tools). */
  only(keep: (pool: string) => boolean): ToolRegistry {
    const r = new ToolRegistry([]);
    for (const t of this.all()) if (keep(t.entry.pool)) r.tools.set(t.entry.name, t);
    r.isolated.push(...this.isolated);
    return r;
  }

  /** The modules whose tools run in child processes: their children kept ready are killed on close. */
  private readonly isolated: IsolatedModule[] = [];

  /** Stops what the tools keep running between calls (the child processes started ahead of isolated calls). */
  close(): void {
    for (const m of this.isolated) m.close();
  }

  add(def: ToolDefinition): void {
    if (this.tools.has(def.name))
      throw new Error(`tool ${def.name} is defined twice (a tool has one home: one definition, one pool)`);
    if (def.pool === LOCAL_POOL && (def.timeoutMs ?? LOCAL_TIMEOUT_MS) > LOCAL_TIMEOUT_MS)
      throw new Error(
        `tool ${def.name}: a local tool's timeoutMs is at most ${LOCAL_TIMEOUT_MS} (it runs inside an iteration); run it on a pool instead`,
      );
    const zodSchema = isZod(def.parameters) ? def.parameters : null;
    const jsonSchema = zodSchema
      ? (z.toJSONSchema(zodSchema as unknown as z.ZodType) as Record<string, unknown>)
      : (def.parameters as Record<string, unknown>);
    let validator: ValidateFunction | null = null;
    if (!zodSchema) {
      try {
        validator = this.ajv.compile(jsonSchema);
      } catch (e) {
        throw new Error(`tool ${def.name}: parameters is not a valid JSON Schema: ${(e as Error).message}`);
      }
    }
    const entry: CatalogEntry = {
      name: def.name,
      description: def.description ?? '',
      parameters: jsonSchema,
      sideEffect: def.sideEffect,
      pool: def.pool ?? 'default',
      timeoutMs: def.timeoutMs ?? (def.pool === LOCAL_POOL ? LOCAL_TIMEOUT_MS : 30_000),
      retry: def.retry ?? 'safe',
    };
    this.tools.set(def.name, {
      def,
      entry,
      validate(args) {
        if (zodSchema) {
          const r = zodSchema.safeParse(args);
          if (r.success) return { ok: true, value: r.data as Record<string, unknown> };
          return {
            ok: false,
            problems: (r.error?.issues ?? []).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
          };
        }
        // ajv fills in schema defaults in place: `args` is the caller's own (executeToolCall parses it for this call)
        if (validator!(args)) return { ok: true, value: args as Record<string, unknown> };
        return {
          ok: false,
          problems: (validator!.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`),
        };
      },
    });
  }

  private unavailableReason: (name: string) => string | undefined = () => undefined;

  /**
   * Names this registry does not have but may serve later, with the reason (an MCP server that has not answered since
   * this process started: the catalog may still list its tools from an earlier runner). A call to one is a retryable
   * tool_error rather than unknown_tool.
   */
  setUnavailable(reason: (name: string) => string | undefined): void {
    this.unavailableReason = reason;
  }

  unavailable(name: string): string | undefined {
    return this.tools.has(name) ? undefined : this.unavailableReason(name);
  }

  /** Takes tools out (an MCP server's, before its refreshed list is added again). */
  remove(names: Iterable<string>): void {
    for (const n of names) this.tools.delete(n);
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  all(): RegisteredTool[] {
    return [...this.tools.values()];
  }

  pools(): string[] {
    return [...new Set(this.all().map((t) => t.entry.pool))];
  }
}
