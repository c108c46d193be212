import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import {
  CALL_TRANSITIONS,
  INDEXED_STATUSES,
  PHASE_TRANSITIONS,
  RUN_SCRIPT_KEYS,
  RUN_STATUS_SCRIPT_KEYS,
  fieldWritersLua,
  statusTransitionsLua,
  transitionsLua,
} from '@agentloop/protocol';
import { RUN_LAYOUT, STATE_FIELDS } from './run-state.js';
import { closedCallsLua } from './closed-calls.js';
import { eventTemplatesLua } from './event-templates.js';

const LUA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../lua');

/**
 * Every run script, BullMQ-style: `lua/<name>-<numberOfKeys>.lua`, and the outcomes it may answer. Its keys are the
 * key space's lists (DeploymentKeys.runScript, or runStatusScript for a script that may change the run's status; the
 * thread's four after them for createRun), so a script declares every key it touches. One convention
 * for all of them: a script returns `{outcome, value...}` (outcome a name below, values strings or numbers), and
 * `Scripts.run` is its one decoder: it checks the number of keys against the file name and the outcome against this
 * table, so a script and its caller cannot drift apart silently.
 */
export const SCRIPTS = {
  createRun: { keys: RUN_STATUS_SCRIPT_KEYS + 4, outcomes: ['created', 'exists', 'limited', 'taken', 'thread_busy'] },
  endThreadRun: { keys: 4, outcomes: ['next', 'idle'] },
  startThreadRun: { keys: RUN_SCRIPT_KEYS, outcomes: ['started', 'stale'] },
  startIteration: { keys: RUN_STATUS_SCRIPT_KEYS, outcomes: ['started', 'stale', 'waiting'] },
  appendEvents: { keys: RUN_SCRIPT_KEYS, outcomes: ['appended', 'stale'] },
  checkpointResponse: { keys: RUN_STATUS_SCRIPT_KEYS, outcomes: ['recorded', 'stale', 'ids_taken'] },
  closeToolCall: { keys: RUN_SCRIPT_KEYS, outcomes: ['closed', 'answered', 'stale'] },
  markToolRunning: { keys: RUN_SCRIPT_KEYS, outcomes: ['first', 'taken', 'owned', 'answered', 'cancel', 'expired'] },
  recordToolResult: { keys: RUN_SCRIPT_KEYS, outcomes: ['recorded', 'closed', 'stale', 'answered'] },
  recordToolResults: { keys: RUN_SCRIPT_KEYS, outcomes: ['recorded'] },
  endRun: { keys: RUN_STATUS_SCRIPT_KEYS, outcomes: ['ended', 'stale'] },
  requestCancel: { keys: RUN_STATUS_SCRIPT_KEYS, outcomes: ['terminal', 'ended', 'requested'] },
  applyDecisions: {
    keys: RUN_STATUS_SCRIPT_KEYS,
    outcomes: ['resumed', 'waiting', 'not_found', 'not_paused', 'conflict', 'invalid', 'edit_stale'],
  },
  applyCompression: { keys: RUN_SCRIPT_KEYS, outcomes: ['applied', 'stale'] },
  addUsage: { keys: RUN_SCRIPT_KEYS, outcomes: ['added', 'ended'] },
  watchRun: { keys: RUN_SCRIPT_KEYS, outcomes: ['watching', 'gone'] },
  claimModelCall: { keys: RUN_SCRIPT_KEYS, outcomes: ['claimed', 'stale'] },
  readEvents: { keys: RUN_SCRIPT_KEYS, outcomes: ['events'] },
  enqueueWebhook: { keys: RUN_SCRIPT_KEYS, outcomes: ['queued', 'idle', 'gone'] },
  nextWebhook: { keys: RUN_SCRIPT_KEYS, outcomes: ['due', 'idle', 'stale', 'gone'] },
  saveWebhookBody: { keys: RUN_SCRIPT_KEYS, outcomes: ['saved', 'stale'] },
  recordWebhookAttempt: { keys: RUN_SCRIPT_KEYS, outcomes: ['recorded', 'stale'] },
} as const satisfies Record<string, { keys: number; outcomes: readonly string[] }>;

/** Where the status keys sit in KEYS (after the tenant's run index), compiled into common.lua. */
function statusKeysLua(): string {
  const at = INDEXED_STATUSES.map((s, i) => `${s} = ${RUN_SCRIPT_KEYS + 2 + i}`);
  return `local STATUS_KEY = { ${at.join(', ')} }\nlocal IDEM_KEY = ${RUN_STATUS_SCRIPT_KEYS}\n`;
}

export type ScriptName = keyof typeof SCRIPTS;
export type ScriptOutcome<N extends ScriptName> = (typeof SCRIPTS)[N]['outcomes'][number];
export interface ScriptResult<N extends ScriptName> {
  outcome: ScriptOutcome<N>;
  /** The values after the outcome, as Redis returned them (strings; numbers for integer replies). */
  values: Array<string | number>;
}

let sources: Map<ScriptName, string> | null = null;
let common: string | null = null;

/**
 * What every run script starts with, as `name` (its SCRIPT, for the field writers' table): the tables compiled in —
 * the transitions and field writers from protocol, the state fields from run-state.ts, the templates of the events a
 * script fills in from event-templates.ts (one table for both sides) — then common.lua.
 */
export function commonLua(name: string): string {
  if (!common) {
    const stateFields = `{ ${STATE_FIELDS.map((f) => `'${f}'`).join(', ')} }`;
    common = `local TRANSITIONS = ${statusTransitionsLua()}\nlocal PHASES = ${transitionsLua(PHASE_TRANSITIONS)}\nlocal CALL_STATES = ${transitionsLua(CALL_TRANSITIONS)}\nlocal FIELD_WRITERS = ${fieldWritersLua()}\nlocal STATE_FIELDS = ${stateFields}\nlocal LAYOUT = '${RUN_LAYOUT}'\n${statusKeysLua()}${eventTemplatesLua()}${closedCallsLua()}${fs.readFileSync(path.join(LUA_DIR, 'common.lua'), 'utf8')}`;
  }
  return `local SCRIPT = '${name}'\n${common}`;
}

function loadSources(): Map<ScriptName, string> {
  if (!sources) {
    const names = Object.keys(SCRIPTS) as ScriptName[];
    sources = new Map(
      names.map((n) => [
        n,
        `${commonLua(n)}\n${fs.readFileSync(path.join(LUA_DIR, `${n}-${SCRIPTS[n].keys}.lua`), 'utf8')}`,
      ]),
    );
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
      const fn = (redis as unknown as Record<string, (n: number, ...a: Array<string | number>) => Promise<unknown>>)[
        cmd
      ]!.bind(redis);
      this.callers.set(name, (keys, args) => fn(keys.length, ...keys, ...args));
    }
  }

  async run<N extends ScriptName>(name: N, keys: string[], args: Array<string | number>): Promise<ScriptResult<N>> {
    const spec = SCRIPTS[name];
    if (keys.length !== spec.keys) throw new Error(`script ${name} takes ${spec.keys} keys, given ${keys.length}`);
    const raw = await this.callers.get(name)!(keys, args);
    const [outcome, ...values] = Array.isArray(raw) ? (raw as Array<string | number>) : [raw as string];
    if (!(spec.outcomes as readonly unknown[]).includes(outcome))
      throw new Error(`script ${name} answered ${JSON.stringify(outcome)}, not one of its outcomes`);
    return { outcome: outcome as ScriptOutcome<N>, values };
  }
}
