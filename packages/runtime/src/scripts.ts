import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { statusTransitionsLua } from '@agentloop/protocol';

const LUA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../lua');
const SCRIPT_NAMES = ['create', 'start-iteration', 'append-events', 'checkpoint-response', 'close-tool-call', 'mark-tool-running', 'record-tool-result', 'finish-run', 'request-cancel', 'apply-decisions', 'apply-compression', 'add-usage'] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

let sources: Map<ScriptName, string> | null = null;

function loadSources(): Map<ScriptName, string> {
  if (!sources) {
    // the transition table comes from protocol, compiled into every script (one table for both sides)
    const common = `local TRANSITIONS = ${statusTransitionsLua()}\n${fs.readFileSync(path.join(LUA_DIR, 'common.lua'), 'utf8')}`;
    sources = new Map(SCRIPT_NAMES.map((n) => [n, `${common}\n${fs.readFileSync(path.join(LUA_DIR, `${n}.lua`), 'utf8')}`]));
  }
  return sources;
}

type ScriptCaller = (keys: string[], args: Array<string | number>) => Promise<unknown>;

/**
 * The only caller of Lua. Scripts are registered by content (EVALSHA of their SHA-1), so processes of two
 * versions in a rolling deploy never run each other's scripts under one name.
 */
export class Scripts {
  private readonly callers = new Map<ScriptName, ScriptCaller>();

  constructor(redis: Redis) {
    for (const [name, lua] of loadSources()) {
      const cmd = `al_${name.replace(/-/g, '_')}`;
      redis.defineCommand(cmd, { lua });
      const fn = (redis as unknown as Record<string, (n: number, ...a: Array<string | number>) => Promise<unknown>>)[cmd]!.bind(redis);
      this.callers.set(name, (keys, args) => fn(keys.length, ...keys, ...args));
    }
  }

  run(name: ScriptName, keys: string[], args: Array<string | number>): Promise<unknown> {
    return this.callers.get(name)!(keys, args);
  }
}
