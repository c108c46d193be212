import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { statusTransitionsLua } from '@agentloop/protocol';
import { RUN_LAYOUT, STATE_FIELDS } from './run-state.js';

const LUA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../lua');

/**
 * Every run script, BullMQ-style: `lua/<name>-<numberOfKeys>.lua`, and the outcomes it may answer. One convention
 * for all of them: a script returns `{outcome, value...}` (outcome a name below, values strings or numbers), and
 * `Scripts.run` is its one decoder: it checks the number of keys against the file name and the outcome against this
 * table, so a script and its caller cannot drift apart silently.
 */
export const SCRIPTS = {
  createRun: { keys: 8, outcomes: ['created', 'exists', 'limited', 'taken', 'thread_busy'] },
  endThreadRun: { keys: 4, outcomes: ['next', 'idle'] },
  startThreadRun: { keys: 4, outcomes: ['started', 'stale'] },
  startIteration: { keys: 4, outcomes: ['started', 'stale', 'waiting'] },
  appendEvents: { keys: 4, outcomes: ['appended', 'stale'] },
  checkpointResponse: { keys: 4, outcomes: ['recorded', 'stale', 'ids_taken'] },
  closeToolCall: { keys: 4, outcomes: ['closed', 'answered', 'stale'] },
  markToolRunning: { keys: 4, outcomes: ['first', 'taken', 'owned', 'answered', 'cancel', 'expired'] },
  recordToolResult: { keys: 4, outcomes: ['recorded', 'closed', 'stale', 'answered'] },
  endRun: { keys: 4, outcomes: ['ended', 'stale'] },
  requestCancel: { keys: 4, outcomes: ['terminal', 'ended', 'requested'] },
  applyDecisions: { keys: 4, outcomes: ['resumed', 'waiting', 'not_found', 'not_paused', 'conflict', 'invalid', 'edit_stale'] },
  applyCompression: { keys: 5, outcomes: ['applied', 'stale'] },
  addUsage: { keys: 4, outcomes: ['added', 'ended'] },
  watchRun: { keys: 4, outcomes: ['watching', 'gone'] },
  claimModelCall: { keys: 4, outcomes: ['claimed', 'stale'] },
  readEvents: { keys: 4, outcomes: ['events'] },
  enqueueWebhook: { keys: 5, outcomes: ['queued', 'idle', 'gone'] },
  nextWebhook: { keys: 5, outcomes: ['due', 'idle', 'stale', 'gone'] },
  saveWebhookBody: { keys: 5, outcomes: ['saved', 'stale'] },
  recordWebhookAttempt: { keys: 5, outcomes: ['recorded', 'stale'] },
} as const satisfies Record<string, { keys: number; outcomes: readonly string[] }>;

export type ScriptName = keyof typeof SCRIPTS;
export type ScriptOutcome<N extends ScriptName> = (typeof SCRIPTS)[N]['outcomes'][number];
export interface ScriptResult<N extends ScriptName> {
  outcome: ScriptOutcome<N>;
  /** The values after the outcome, as Redis returned them (strings; numbers for integer replies). */
  values: Array<string | number>;
}

let sources: Map<ScriptName, string> | null = null;

function loadSources(): Map<ScriptName, string> {
  if (!sources) {
    // the transition table comes from protocol, the state fields from run-state.ts, compiled into every script (one
    // table for both sides)
    const stateFields = `{ ${STATE_FIELDS.map((f) => `'${f}'`).join(', ')} }`;
    const common = `local TRANSITIONS = ${statusTransitionsLua()}\nlocal STATE_FIELDS = ${stateFields}\nlocal LAYOUT = '${RUN_LAYOUT}'\n${fs.readFileSync(path.join(LUA_DIR, 'common.lua'), 'utf8')}`;
    const names = Object.keys(SCRIPTS) as ScriptName[];
    sources = new Map(names.map((n) => [n, `${common}\n${fs.readFileSync(path.join(LUA_DIR, `${n}-${SCRIPTS[n].keys}.lua`), 'utf8')}`]));
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
      const cmd = `al_${name}`;
      redis.defineCommand(cmd, { lua });
      const fn = (redis as unknown as Record<string, (n: number, ...a: Array<string | number>) => Promise<unknown>>)[cmd]!.bind(redis);
      this.callers.set(name, (keys, args) => fn(keys.length, ...keys, ...args));
    }
  }

  async run<N extends ScriptName>(name: N, keys: string[], args: Array<string | number>): Promise<ScriptResult<N>> {
    const spec = SCRIPTS[name];
    if (keys.length !== spec.keys) throw new Error(`script ${name} takes ${spec.keys} keys, given ${keys.length}`);
    const raw = await this.callers.get(name)!(keys, args);
    const [outcome, ...values] = Array.isArray(raw) ? (raw as Array<string | number>) : [raw as string];
    if (!(spec.outcomes as readonly unknown[]).includes(outcome)) throw new Error(`script ${name} answered ${JSON.stringify(outcome)}, not one of its outcomes`);
    return { outcome: outcome as ScriptOutcome<N>, values };
  }
}
