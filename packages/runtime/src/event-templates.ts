import {
  iterationCompletedData,
  resumedDecision,
  runResumedData,
  toolCallData,
  wellFormedJson,
} from '@agentloop/protocol';
import { envelopeTail } from './event-lines.js';
import type { PreparedDecision } from './run-store-types.js';

/*
 * The events a run script builds itself — those whose content it reads in its own atomic step — are built here all the
 * same: their data builders (protocol's event-data.ts) render a template, JSON with a slot `\u0001name\u0001` wherever a
 * value the script reads goes, and the script only fills the slots in (fillTemplate, lua/common.lua), with JSON text.
 * JSON text never holds a raw control character, so a slot cannot be mistaken for anything the template says.
 */

const MARK = '\u0001';
/** (common.lua finds slots by `\1(%w+)\1`) */
const SLOT_NAME = /^[A-Za-z0-9]+$/;

/** A slot, in place of a value while a builder runs: `slot<T>('name')` stands for a T the script fills in. */
export type Slot = <T>(name: string) => T;

/** A slot's mark where a template is written as text (not rendered from a value). */
const slotMark = (name: string): string => `${MARK}${name}${MARK}`;

/**
 * The template of the data `build` makes, given slots. Each slot's stand-in is a string, found in the JSON by its text:
 * when a string of the data (a tool's result, a reason) happens to equal a stand-in, the stand-ins grow until unique.
 */
export function eventTemplate(build: (slot: Slot) => unknown): string {
  for (let pad = ''; ; pad += MARK) {
    const slots = new Map<string, string>();
    const slot = (name: string) => {
      if (!SLOT_NAME.test(name) || slots.has(name))
        throw new Error(`event template: slot name ${JSON.stringify(name)} is not alphanumeric, or used twice`);
      const standIn = `${MARK}${pad}${name}${MARK}`;
      slots.set(name, JSON.stringify(standIn));
      return standIn;
    };
    const text = wellFormedJson(build(slot as Slot));
    const missing = [...slots].find(([, s]) => !text.includes(s));
    if (missing) throw new Error(`event template: slot ${missing[0]} is not in the data its builder made`);
    if ([...slots.values()].every((s) => text.indexOf(s) === text.lastIndexOf(s))) {
      let out = text;
      for (const [name, s] of slots) out = out.replace(s, () => slotMark(name));
      return out;
    }
  }
}

/**
 * The data template of a decision's tool.call event, rendered per request (its status, error or result are the
 * caller's): applyDecisions-18.lua fills in the call's name and its arguments as shown from the call's record — the
 * model's, shown as `originalArguments` when the decision edited them.
 */
export function decisionEventTemplate(d: PreparedDecision): string {
  return eventTemplate((slot) => {
    const shown =
      d.editedArguments === undefined
        ? { arguments: slot('display') }
        : { arguments: d.editedArguments, originalArguments: slot('display') };
    return toolCallData(
      { callId: d.callId, name: slot('name'), ...shown },
      d.action === 'approve' ? 'approved' : d.action === 'deny' ? 'denied' : d.outcome!.status,
      d.outcome ?? undefined,
    );
  });
}

/** A Lua long string (its level picked so the text cannot close it, nor nest a `[[` Lua 5.1 refuses at level 0). */
export function luaString(text: string): string {
  let eq = text.includes('[[') ? '=' : '';
  while (text.includes(`]${eq}]`)) eq += '=';
  return `[${eq}[${text}]${eq}]`;
}

/**
 * The templates compiled into the run scripts (lua/common.lua; closed-calls.ts compiles those of the calls it answers):
 * the envelope of an event (eventLines'), iteration.completed with the usage the script read or none (a run ending
 * during its model call), run.resumed and each decision it lists (its `decisions` slot takes them comma-separated).
 */
export function eventTemplatesLua(): string {
  const templates = {
    envelope: envelopeTail(slotMark('runId'), slotMark('type'), slotMark('at'), slotMark('data')),
    iterationCompleted: eventTemplate((slot) => iterationCompletedData(slot('iteration'), slot('usage'))),
    iterationCompletedNoUsage: eventTemplate((slot) => iterationCompletedData(slot('iteration'))),
    runResumed: eventTemplate((slot) => runResumedData([slot('decisions')])),
    resumedDecision: eventTemplate((slot) => resumedDecision(slot('callId'), slot('action'))),
  };
  return `local EVENT_TEMPLATES = { ${Object.entries(templates)
    .map(([k, v]) => `${k} = ${luaString(v)}`)
    .join(', ')} }\n`;
}
