import { z } from 'zod';
import type { FunctionCall } from '@google/genai';
import { UNNAMED_TOOL, newCallId, type ToolCall } from '@agentloop/protocol';
import { GOOGLE } from './convert-contents.js';
import { Str, opt } from '../wire.js';

// The wire boundary (see ../wire.ts): a functionCall part is checked for the fields read from it; a field of an
// unexpected type reads as absent, a partial argument that is not an object is skipped.
const Call = z.object({
  id: opt(z.union([Str, z.number().transform(String)])),
  name: opt(Str),
  args: z.unknown().optional(),
  partialArgs: opt(z.array(z.unknown())),
  willContinue: opt(z.boolean()),
});
const PartialArgWire = z.object({
  jsonPath: opt(Str),
  stringValue: opt(Str),
  numberValue: opt(z.number()),
  boolValue: opt(z.boolean()),
  willContinue: opt(z.boolean()),
});
type PartialArg = z.infer<typeof PartialArgWire>;

const partialsOf = (list: unknown[] | null | undefined): PartialArg[] =>
  (list ?? []).flatMap((p) => {
    const r = PartialArgWire.safeParse(p);
    return r.success ? [r.data] : [];
  });

interface Building {
  id: string;
  name: string;
  args: Record<string, unknown>;
  signature?: string;
  /** JSON paths whose string value is still arriving in pieces. */
  continuing: Set<string>;
  /** Why the call cannot be run: a streamed path was refused (prototype key, too deep, an absurd array index), args not an object. */
  malformed?: string;
}

/** `$.a.b[0]['c d']` → ['a', 'b', 0, 'c d']. */
function pathSegments(jsonPath: string): Array<string | number> {
  const out: Array<string | number> = [];
  const re = /\.([^.[\]]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]/g;
  for (const m of jsonPath.replace(/^\$/, '').matchAll(re))
    out.push(m[2] !== undefined ? Number(m[2]) : (m[1] ?? m[3] ?? m[4])!);
  return out;
}

function valueOf(p: PartialArg): unknown {
  if (p.stringValue !== undefined) return p.stringValue;
  if (p.numberValue !== undefined) return p.numberValue;
  if (p.boolValue !== undefined) return p.boolValue;
  return null;
}

/** Keys that would reach an object's prototype, and bounds on what a streamed path may build. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const MAX_PATH_DEPTH = 64;
const MAX_ARRAY_INDEX = 10_000;

/** Whether a model-sent path may be applied: no prototype keys, bounded depth and array indexes. */
function safePath(segs: Array<string | number>): boolean {
  return (
    segs.length <= MAX_PATH_DEPTH &&
    segs.every((s) => (typeof s === 'number' ? s <= MAX_ARRAY_INDEX : !FORBIDDEN_KEYS.has(s)))
  );
}

function applyPartial(call: Building, p: PartialArg): void {
  const path = p.jsonPath ?? '$';
  const segs = pathSegments(path);
  if (!segs.length) return;
  if (!safePath(segs)) {
    call.malformed ??= 'a streamed argument path was refused'; // the call is answered invalid_arguments; nothing it sent is applied
    return;
  }
  let node: Record<string | number, unknown> = call.args;
  for (let i = 0; i < segs.length - 1; i++) {
    const seg = segs[i]!;
    if (node[seg] === undefined || node[seg] === null || typeof node[seg] !== 'object')
      node[seg] = typeof segs[i + 1] === 'number' ? [] : {};
    node = node[seg] as Record<string | number, unknown>;
  }
  const last = segs[segs.length - 1]!;
  const v = valueOf(p);
  // a string streamed in pieces: each piece extends the previous one for the same path
  if (typeof v === 'string' && call.continuing.has(path) && typeof node[last] === 'string')
    node[last] = (node[last] as string) + v;
  else node[last] = v;
  if (p.willContinue) call.continuing.add(path);
  else call.continuing.delete(path);
}

/**
 * Gemini function calls from a stream, whole or streamed (`streamFunctionCallArguments`): a part naming the
 * function opens a call; `partialArgs` parts without a name add to the open call (strings continued piecewise);
 * a part without `willContinue` closes it. Calls without an id get a generated one; the thoughtSignature stays
 * with the call it arrived on.
 */
export class GeminiFunctionCallAssembler {
  private readonly calls: Building[] = [];
  private open: Building | null = null;

  add(raw: FunctionCall, thoughtSignature?: unknown): void {
    const parsed = Call.safeParse(raw);
    if (!parsed.success) return;
    const fc = parsed.data;
    const signature = typeof thoughtSignature === 'string' && thoughtSignature ? thoughtSignature : undefined;
    const partials = partialsOf(fc.partialArgs);
    const hasArgs = fc.args !== undefined && fc.args !== null;
    // a call without a name that continues nothing is still a call: answered unknown_tool, never dropped
    const nameless = !fc.name && !this.open && (fc.id !== undefined || hasArgs);
    if (fc.name || nameless) {
      const objectArgs = hasArgs && typeof fc.args === 'object' && !Array.isArray(fc.args);
      const call: Building = {
        id: fc.id || newCallId(),
        name: fc.name || UNNAMED_TOOL,
        args: objectArgs ? { ...(fc.args as Record<string, unknown>) } : {},
        continuing: new Set(),
        ...(signature ? { signature } : {}),
      };
      // args that are not an object: nothing of them can be run (answered invalid_arguments, the model tries again)
      if (hasArgs && !objectArgs) call.malformed = "the function call's args were not a JSON object";
      this.calls.push(call);
      this.open = null;
      for (const p of partials) applyPartial(call, p);
      if (fc.willContinue) this.open = call;
      return;
    }
    if (!this.open) return;
    for (const p of partials) applyPartial(this.open, p);
    if (signature && !this.open.signature) this.open.signature = signature;
    if (!fc.willContinue) this.open = null;
  }

  finish(): ToolCall[] {
    return this.calls.map((c) => {
      const args = c.malformed ? null : argumentsText(c.args);
      const malformed = c.malformed ?? 'arguments nested too deep to serialize';
      const providerData = {
        ...(c.signature ? { provider: GOOGLE, thoughtSignature: c.signature } : {}),
        ...(args === null ? { provider: GOOGLE, malformed } : {}),
      };
      return {
        id: c.id,
        name: c.name,
        arguments: args ?? '{}',
        ...(Object.keys(providerData).length ? { providerData } : {}),
      };
    });
  }
}

/** The arguments object as JSON text; null when it is too deep to serialize (a model's output is untrusted). */
function argumentsText(args: unknown): string | null {
  try {
    return JSON.stringify(args);
  } catch {
    return null;
  }
}
