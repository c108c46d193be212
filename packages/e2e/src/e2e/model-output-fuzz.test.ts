import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import fc from 'fast-check';
import {
  SAFE_CALL_ID_RE,
  transcriptProblems,
  type EventEnvelope,
  type Message,
  type RunSnapshot,
} from '@agentloop/protocol';
import {
  checkEvents,
  type JournalEntry,
  type MockRequest,
  type MockToolCall,
  type ReplySpec,
} from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';

/**
 * SPEC §3 as a property: "Whatever a model sends is untrusted input: arguments of any size or nesting, ids that
 * repeat across turns or contain any character, names of no tool. None of it fails or stalls the run; the stored ids
 * are unique within the run (the provider's own id is kept for the round trip to that provider)."
 *
 * fast-check generates one scripted model per run (the OpenAI Chat and Responses wires in each chunking mode, and Gemini): for 3..6
 * iterations it emits 1..4 parallel tool calls with generated names, ids and arguments, then a final text answer.
 * Every run must
 *  - complete (never failed, never stuck: a run not finished after RUN_TIMEOUT_MS is reported with its last
 *    snapshot and events);
 *  - keep the transcript invariant of SPEC §2 in its history (`?include=history`), with stored call ids unique across
 *    the run and safe (SAFE_CALL_ID_RE), every call answered by exactly one tool message, and no call of the model
 *    lost or added;
 *  - have a gap-free event log (seq 1..n) with exactly one terminal event, last, and tool.call events for exactly
 *    the stored calls;
 *  - never send the model a request that the mock refuses or that pairs calls and results wrongly (an orphan or a
 *    missing tool result); Gemini gets its own call ids back.
 *
 * fast-check's shrinker re-runs a property hundreds of times, too slow for end-to-end runs: the samples run several
 * at a time through one in-process stack instead, and each distinct failure is reduced here (turns, calls, chunking,
 * arguments, ids and names simplified while the failure persists); the test fails with one small ReplySpec per
 * distinct failure. Environment: AGENTLOOP_FUZZ_SEED (printed on every run) reproduces a run's samples,
 * AGENTLOOP_FUZZ_RUNS and AGENTLOOP_FUZZ_PARALLEL size it, AGENTLOOP_FUZZ_DUMP=<file> writes each failure's reduced
 * case as JSON, and AGENTLOOP_FUZZ_REPLAY=<file> runs such cases (a JSON array) instead of generated ones.
 */

const NUM_RUNS = Number(process.env.AGENTLOOP_FUZZ_RUNS ?? 60);
const SEED = Number(process.env.AGENTLOOP_FUZZ_SEED ?? Date.now() % 2 ** 31);
const PARALLEL = Number(process.env.AGENTLOOP_FUZZ_PARALLEL ?? 4);
const RUN_TIMEOUT_MS = 60_000; // generous: CI runs other suites beside this one; a hang still shows
/** Reducing failures: at most this many extra runs per distinct failure, and this much time for all of them. */
const REDUCE_RUNS = 80;
/** A reduced case is small: it has this long to finish before it counts as stalled. */
const REDUCE_RUN_TIMEOUT_MS = 8_000;
const REDUCE_BUDGET_MS = 40_000;
/** A JSON file of cases (Case[]) to run instead of generated ones; a file to write each failure's reduced case to. */
const REPLAY = process.env.AGENTLOOP_FUZZ_REPLAY;
const DUMP = process.env.AGENTLOOP_FUZZ_DUMP;
const TOOLS = ['calculator', 'current_time'];
const MODELS = {
  openai: { provider: 'openai', name: 'gpt-4o-mini', api: 'chat' },
  responses: { provider: 'openai', name: 'gpt-4o-mini' },
  google: { provider: 'google', name: 'gemini-2.5-flash' },
} as const;
type Provider = keyof typeof MODELS;
type Chunking = NonNullable<ReplySpec['chunking']>;

/** One generated model: the provider and the replies of its tool-calling turns (a final text answer follows). */
interface Case {
  provider: Provider;
  turns: ReplySpec[];
}

// ---- ids --------------------------------------------------------------------------------------------------------

const weirdChar = fc.constantFrom(
  ':',
  '/',
  ' ',
  '\\',
  '"',
  "'",
  '\n',
  '\t',
  '\0',
  '.',
  '#',
  '?',
  '%',
  '{',
  '}',
  '*',
  '$',
  'é',
  'ß',
  '中',
  '🙂',
  '\u200b',
  '\ud800',
  'a',
  'Z',
  '0',
  '_',
  '-',
);
const literalId: fc.Arbitrary<string | null> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(null) }, // the provider sends no id
  { weight: 1, arbitrary: fc.constant('') },
  { weight: 2, arbitrary: fc.string({ unit: weirdChar, minLength: 1, maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 24 }) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/) }, // safe already: may still repeat
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'call:1',
      'call/1',
      'call 1',
      'call_1',
      'dup',
      'toolu_01',
      'functions.calculator:0',
      '..',
      '-',
      '__proto__',
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 65, max: 500 })
      .chain((n) =>
        fc.constantFrom('x'.repeat(n), 'é'.repeat(n), `call_${'9'.repeat(n - 5)}`, 'a:'.repeat(Math.ceil(n / 2))),
      ),
  },
  { weight: 1, arbitrary: fc.constant('i'.repeat(500)) },
  { weight: 1, arbitrary: fc.string({ unit: weirdChar, minLength: 65, maxLength: 500 }) },
);
/** An id as generated: a literal, or an index into the run's small id pool (so ids repeat in a turn and across turns). */
type GenId = { lit: string | null } | { ref: number };
const genId: fc.Arbitrary<GenId> = fc.oneof(
  literalId.map((lit) => ({ lit })),
  fc.nat().map((ref) => ({ ref })),
);

// ---- names ------------------------------------------------------------------------------------------------------

const genName: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('calculator', 'current_time') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'no_such_tool',
      'Calculator',
      'calculator ',
      ' calculator',
      'calc',
      'functions.calculator',
      'default_api:calculator',
      'current_time()',
      'sleep',
      'lookup',
      'wipe_disk',
      'send_email',
      '__proto__',
      'constructor',
      'toString',
      'hasOwnProperty',
    ),
  },
  { weight: 2, arbitrary: fc.string({ unit: weirdChar, minLength: 1, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: 199, max: 400 }).map((n) => 'n'.repeat(n)) },
  { weight: 1, arbitrary: fc.constant('') },
);

// ---- arguments --------------------------------------------------------------------------------------------------

/** Arguments of a call: a value the mock serialises (`args`) or raw argument text (`arguments`). */
type GenArgs = { args: unknown } | { arguments: string };

/** Nesting built as text (a value this deep cannot go through JSON.stringify). */
function nested(n: number, kind: 'object' | 'array' | 'mixed' | 'string-tail'): string {
  switch (kind) {
    case 'object':
      return '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    case 'array':
      return '['.repeat(n) + ']'.repeat(n);
    case 'mixed':
      return '{"a":['.repeat(Math.ceil(n / 2)) + '0' + ']}'.repeat(Math.ceil(n / 2));
    default:
      return '{"k":['.repeat(Math.ceil(n / 2)) + '"}]}]{[\\""' + ']}'.repeat(Math.ceil(n / 2));
  }
}
const depth = (max: number) =>
  fc.oneof(fc.integer({ min: 60, max: 70 }), fc.integer({ min: 1, max }), fc.constant(max));
const deepText = fc
  .record({
    n: depth(10_000),
    kind: fc.constantFrom('object', 'array', 'mixed', 'string-tail'),
    cut: fc.nat({ max: 3 }),
  })
  .map(({ n, kind, cut }) => {
    const t = nested(n, kind as Parameters<typeof nested>[1]);
    return cut ? t.slice(0, t.length - cut) : t; // cut > 0: closers missing (malformed)
  });

/** A long string (up to ~3 MB) from a random unit: as an expression, a JSON string, raw text or an object of many keys. */
const largeText = fc
  .record({
    size: fc.oneof(
      { weight: 3, arbitrary: fc.integer({ min: 1_000, max: 64_000 }) },
      { weight: 2, arbitrary: fc.integer({ min: 64_000, max: 3_000_000 }) },
    ),
    unit: fc.string({ unit: 'binary', minLength: 1, maxLength: 6 }),
    wrap: fc.constantFrom('expression', 'json-string', 'raw', 'many-keys'),
  })
  .map(({ size, unit, wrap }) => {
    const s = unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
    switch (wrap) {
      case 'expression':
        return JSON.stringify({ expression: s });
      case 'json-string':
        return JSON.stringify(s);
      case 'raw':
        return s;
      default:
        return (
          '{' + Array.from({ length: Math.max(1, Math.floor(size / 12)) }, (_, i) => `"k${i}":${i}`).join(',') + '}'
        );
    }
  });

const malformed = fc.oneof(
  fc.constantFrom(
    '{"broken',
    '{',
    '}',
    '[',
    '[1,',
    'nul',
    'tru',
    '{"a":1,}',
    "{'a':1}",
    'NaN',
    'Infinity',
    '{"a":undefined}',
    '{"expression":"1+1"',
    '{"expression":"1+1"}}',
    '{"expression":"1+1"}{"expression":"2+2"}',
    '{}{}',
    '\u0000',
    '\ufeff{}',
    '{"a":"\\ud800"}',
    '{"a":"\\x"}',
    '"unterminated',
    '{"a":1}garbage',
    '  ',
    '\n',
    '{"__proto__":{"x":1}}',
    '{"constructor":{"prototype":{}}}',
  ),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.string({ unit: fc.constantFrom('{', '}', '[', ']', '"', ':', ',', '\\', 'a', '1', ' '), maxLength: 60 }),
);

const calculatorArgs = fc.oneof(
  fc
    .constantFrom('1+1', '17*23', '2^10', 'sqrt(2)', '1/0', '(((1)))', 'pi*e', '')
    .map((expression) => ({ expression })),
  fc.string({ maxLength: 40 }).map((expression) => ({ expression })),
  fc.record({ expression: fc.jsonValue({ maxDepth: 2 }) }),
);
const currentTimeArgs = fc.oneof(
  fc.constant({}),
  fc.constantFrom('UTC', 'Asia/Tokyo', 'Mars/Olympus', '', '../../etc/passwd').map((timezone) => ({ timezone })),
  fc.record({ timezone: fc.jsonValue({ maxDepth: 2 }) }),
);
const jsonObject = fc.dictionary(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.jsonValue({ maxDepth: 5, stringUnit: 'binary' }),
  { maxKeys: 8 },
);

/** OpenAI chat: the arguments are text, anything goes. */
const openaiArgs: fc.Arbitrary<GenArgs> = fc.oneof(
  { weight: 3, arbitrary: calculatorArgs.map((args) => ({ args })) },
  { weight: 2, arbitrary: currentTimeArgs.map((args) => ({ args })) },
  // any JSON value: objects, arrays, scalars (`args` null would read as {}, so values go as text)
  {
    weight: 3,
    arbitrary: fc.jsonValue({ maxDepth: 6, stringUnit: 'binary' }).map((v) => ({ arguments: JSON.stringify(v) })),
  },
  { weight: 1, arbitrary: fc.constant({ arguments: '' }) },
  { weight: 2, arbitrary: malformed.map((a) => ({ arguments: a })) },
  { weight: 2, arbitrary: deepText.map((a) => ({ arguments: a })) },
  { weight: 1, arbitrary: largeText.map((a) => ({ arguments: a })) },
);
/** Whether a text is a JSON object: what a Gemini call's args can be (the only raw text the Gemini mock takes). */
function isJsonObjectText(t: string): boolean {
  try {
    const v: unknown = JSON.parse(t);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

/**
 * Gemini: a call's args are a JSON object (a protobuf Struct) whose depth the API bounds at 100 levels; the mock
 * parses raw `arguments` text into that object, so the text must be a JSON object here ('' sends {}).
 */
const googleArgs: fc.Arbitrary<GenArgs> = fc.oneof(
  { weight: 3, arbitrary: calculatorArgs.map((args) => ({ args })) },
  { weight: 2, arbitrary: currentTimeArgs.map((args) => ({ args })) },
  { weight: 3, arbitrary: jsonObject.map((args) => ({ args })) },
  { weight: 1, arbitrary: fc.constant({ arguments: '' }) },
  {
    weight: 2,
    arbitrary: fc
      .record({ n: depth(100), kind: fc.constantFrom('object', 'mixed') })
      .map(({ n, kind }) => ({ arguments: `{"x":${nested(n, kind as 'object' | 'mixed')}}` })),
  },
  { weight: 1, arbitrary: largeText.filter(isJsonObjectText).map((a) => ({ arguments: a })) },
);

// ---- a run ------------------------------------------------------------------------------------------------------

interface GenCall {
  name: string;
  id: GenId;
  args: GenArgs;
}
const genCall = (args: fc.Arbitrary<GenArgs>): fc.Arbitrary<GenCall> => fc.record({ name: genName, id: genId, args });
const genTurns = (args: fc.Arbitrary<GenArgs>, chunking: fc.Arbitrary<Chunking>) =>
  fc.array(fc.record({ calls: fc.array(genCall(args), { minLength: 1, maxLength: 4 }), chunking }), {
    minLength: 3,
    maxLength: 6,
  });

const genCase: fc.Arbitrary<Case> = fc
  .record({
    provider: fc.constantFrom<Provider>('openai', 'openai', 'responses', 'responses', 'google'),
    pool: fc.array(literalId, { minLength: 1, maxLength: 4 }),
  })
  .chain(({ provider, pool }) =>
    (provider !== 'google'
      ? genTurns(openaiArgs, fc.constantFrom<Chunking>('whole', 'fine', 'interleaved', 'restated'))
      : genTurns(googleArgs, fc.constantFrom<Chunking>('whole', 'fine'))
    ).map((turns): Case => ({
      provider,
      turns: turns.map((t) => {
        const toolCalls = t.calls.map((c): MockToolCall => ({
          name: c.name,
          id: 'lit' in c.id ? c.id.lit : pool[c.id.ref % pool.length]!,
          ...c.args,
        }));
        // Mock limitation, not the product's: `fine`, `interleaved` and `restated` send 4 characters a frame, so
        // megabytes of arguments would be 10^5..10^6 SSE frames (minutes). Turns that large are streamed whole.
        const big = toolCalls.some((c) => (c.arguments?.length ?? 0) > 64_000);
        return { chunking: big ? 'whole' : t.chunking, toolCalls };
      }),
    })),
  );

const argText = (c: MockToolCall) => c.arguments ?? JSON.stringify(c.args ?? {});

/** A printable ReplySpec list (megabytes of arguments shown by their size, head and tail). */
function describeCase(c: Case): string {
  const short = (s: string) =>
    s.length > 120
      ? `${JSON.stringify(s.slice(0, 50))} + …(${s.length} chars)… + ${JSON.stringify(s.slice(-30))}`
      : JSON.stringify(s);
  const turns = c.turns.map((r, i) => {
    const calls = (r.toolCalls ?? []).map((tc) => {
      const json = JSON.stringify(tc.args);
      const args =
        tc.arguments !== undefined
          ? `arguments: ${short(tc.arguments)}`
          : `args: ${json.length > 120 ? `JSON.parse(${short(json)})` : json}`;
      return `{ name: ${short(tc.name)}, id: ${tc.id === null ? 'null' : short(tc.id ?? '')}, ${args} }`;
    });
    return `  turn ${i + 1}: { chunking: '${r.chunking}', toolCalls: [${calls.join(', ')}] }`;
  });
  return `model ${JSON.stringify(MODELS[c.provider])}, replies:\n${turns.join('\n')}\n  then: { text: 'done' }`;
}

// ---- the mock model's script -----------------------------------------------------------------------------------

const MARKER_RE = /\[(fz_\w+)\]/;
const textOf = (c: unknown): string =>
  typeof c === 'string'
    ? c
    : Array.isArray(c)
      ? c.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('')
      : '';
/** The run a request belongs to, from the marker in its user message (also in a body the mock refused to parse). */
function markerOf(req: MockRequest): string | null {
  for (const m of req.messages)
    if (m.role === 'user') {
      const hit = MARKER_RE.exec(m.content ?? '');
      if (hit) return hit[1]!;
    }
  const raw = [
    ...(Array.isArray(req.body.messages)
      ? (req.body.messages as Array<{ role?: unknown; content?: unknown }>)
          .filter((m) => m?.role === 'user')
          .map((m) => textOf(m.content))
      : []),
    ...(Array.isArray(req.body.input)
      ? (req.body.input as Array<{ role?: unknown; content?: unknown }>)
          .filter((m) => m?.role === 'user')
          .map((m) => textOf(m.content))
      : []),
    ...(Array.isArray(req.body.contents)
      ? (req.body.contents as Array<{ role?: unknown; parts?: unknown }>)
          .filter((c) => c?.role !== 'model')
          .map((c) => textOf(c.parts))
      : []),
  ];
  for (const t of raw) {
    const hit = MARKER_RE.exec(t);
    if (hit) return hit[1]!;
  }
  return null;
}

const scripts = new Map<string, { c: Case; served: number }>();
/**
 * The next reply of the run's model. Turns are counted by the loop calls served (those that offer tools), not by
 * the assistant messages in the request: compression may fold earlier turns away, and the script must not replay
 * them. Calls without tools (compression, finalize) get text.
 */
function script(req: MockRequest): ReplySpec {
  const marker = markerOf(req);
  const run = marker ? scripts.get(marker) : undefined;
  if (!run || req.tools.length === 0) return { text: `done ${marker ?? ''}`.trim() };
  const turn = run.served++;
  return turn < run.c.turns.length ? run.c.turns[turn]! : { text: `done ${marker}` };
}

// ---- the properties -------------------------------------------------------------------------------------------------

/** A broken property: `sig` names the kind of failure (to group and reduce by), `detail` says what was seen. */
interface Problem {
  sig: string;
  detail: string;
}
/** A problem's text without the run's particulars (ids, numbers), to group runs by the kind of failure. */
const normalize = (s: string) =>
  s
    .replace(/call\(s\) [\s\S]*? not answered/g, 'call(s) … not answered')
    .replace(/^call [\s\S]*?: (\d+ final statuses|first status|final status is not last)/, 'call …: $1')
    .replace(/call id '[\s\S]*' is not unique/g, 'call id … is not unique')
    .replace(/answers '[\s\S]*?'(,| a second| but)/g, 'answers …$1')
    .replace(/\([a-z_]+(,[a-z_]+)+\)/g, '(…)')
    .replace(/\b(run|call)_[A-Za-z0-9]+/g, '$1_…')
    .replace(/'[^']*'|"[^"]*"/g, '…')
    .replace(/\d+/g, 'N')
    .slice(0, 160);

/**
 * Every request the model got must pair calls and results: each tool result answers a call of the assistant message
 * just before it (by the id that provider knows), at most as often as that id was called, and every call is answered
 * before the next user or assistant message. The provider's ids may repeat across turns (they are its own).
 */
function pairingProblems(messages: readonly Message[]): string[] {
  const problems: string[] = [];
  let open: { index: number; ids: string[]; left: string[] } | null = null;
  const close = (where: string) => {
    if (open?.left.length)
      problems.push(
        `calls [${open.left.map((x) => JSON.stringify(x)).join(', ')}] of message #${open.index} not answered before ${where}`,
      );
    open = null;
  };
  messages.forEach((m, i) => {
    if (m.role === 'tool') {
      const k = open ? open.left.indexOf(m.toolCallId ?? '') : -1;
      if (!open || k < 0)
        problems.push(
          `orphan tool result #${i} answers ${JSON.stringify(m.toolCallId)}${open ? `, the open calls are [${open.ids.map((x) => JSON.stringify(x)).join(', ')}]` : ', no call is open'}`,
        );
      else open.left.splice(k, 1);
      return;
    }
    if (m.role === 'user' || m.role === 'assistant') close(`message #${i}`);
    if (m.role === 'assistant' && m.toolCalls?.length)
      open = { index: i, ids: m.toolCalls.map((c) => c.id), left: m.toolCalls.map((c) => c.id) };
  });
  close('the end of the request');
  return problems;
}

/** Nesting depth of JSON-like text (brackets outside strings), for the coverage line. */
function depthOf(t: string): number {
  let d = 0,
    max = 0,
    str = false;
  for (let i = 0; i < t.length; i++) {
    const ch = t.charCodeAt(i);
    if (str) {
      if (ch === 92) i++;
      else if (ch === 34) str = false;
    } else if (ch === 34) str = true;
    else if (ch === 123 || ch === 91) max = Math.max(max, ++d);
    else if (ch === 125 || ch === 93) d--;
  }
  return max;
}

/** What the generated models sent, summed (so a run shows the property was exercised, not just passed). */
function coverage(cases: Case[]): string {
  const n = {
    turns: 0,
    calls: 0,
    deep: 0,
    deepest: 0,
    big: 0,
    largest: 0,
    invalidJson: 0,
    unsafeIds: 0,
    noIds: 0,
    repeatedInTurn: 0,
    reusedAcrossTurns: 0,
    unknownNames: 0,
    parallel: 0,
  };
  const chunkings = new Set<string>();
  for (const c of cases) {
    const earlier = new Set<string>();
    for (const t of c.turns) {
      n.turns++;
      chunkings.add(`${c.provider}/${t.chunking}`);
      if (t.toolCalls!.length > 1) n.parallel++;
      const inTurn = new Set<string>();
      for (const tc of t.toolCalls!) {
        n.calls++;
        const a = argText(tc);
        const d = depthOf(a);
        if (d > 64) n.deep++;
        n.deepest = Math.max(n.deepest, d);
        if (a.length > 1_000_000) n.big++;
        n.largest = Math.max(n.largest, a.length);
        try {
          JSON.parse(a);
        } catch {
          n.invalidJson++;
        }
        if (!tc.id) n.noIds++;
        else {
          if (!SAFE_CALL_ID_RE.test(tc.id)) n.unsafeIds++;
          if (inTurn.has(tc.id)) n.repeatedInTurn++;
          else if (earlier.has(tc.id)) n.reusedAcrossTurns++;
          inTurn.add(tc.id);
        }
        if (!TOOLS.includes(tc.name)) n.unknownNames++;
      }
      for (const id of inTurn) earlier.add(id);
    }
  }
  return (
    `${n.turns} tool-calling turns (${n.parallel} parallel), ${n.calls} calls: ${n.deep} nested deeper than 64 (deepest ${n.deepest}), ${n.big} over 1 MB (largest ${(n.largest / 1e6).toFixed(1)} MB), ` +
    `${n.invalidJson} not JSON, ${n.noIds} without id, ${n.unsafeIds} unsafe ids, ${n.repeatedInTurn} ids repeated in a turn, ${n.reusedAcrossTurns} reused from an earlier turn, ${n.unknownNames} unknown names; ` +
    `wire modes ${[...chunkings].sort().join(' ')}`
  );
}

describe('model output fuzz (SPEC §3: untrusted model output never fails or stalls a run)', () => {
  let s: InProcessStack;
  let counter = 0;
  const stats = { runs: 0, iterations: 0, calls: 0, openai: 0, responses: 0, google: 0, reduceRuns: 0 };

  beforeAll(async () => {
    s = await InProcessStack.start({ script });
  }, 30_000);
  afterAll(async () => {
    await s?.stop();
  });

  async function waitTerminal(id: string, timeoutMs: number): Promise<{ snap: RunSnapshot | null; stalled: boolean }> {
    const t0 = Date.now();
    let last: RunSnapshot | null = null;
    while (Date.now() - t0 < timeoutMs) {
      const r = await s.a.getRun(id);
      if (r.status === 200) {
        last = r.json;
        if (['completed', 'failed', 'cancelled'].includes(last.status)) return { snap: last, stalled: false };
      }
      await new Promise((res) => setTimeout(res, 50));
    }
    return { snap: last, stalled: true };
  }

  /** One run of a generated model; the properties it broke (empty = all held), each prefixed by the run's outcome. */
  async function runCase(c: Case, timeoutMs = RUN_TIMEOUT_MS): Promise<Problem[]> {
    const problems = await checkRun(c, timeoutMs);
    return problems.map((p) => ({ ...p, detail: `${head.get(c) ?? ''}: ${p.detail}` }));
  }
  const head = new WeakMap<Case, string>();

  async function checkRun(c: Case, timeoutMs: number): Promise<Problem[]> {
    const marker = `fz_${s.prefix.replace(/\W/g, '')}_${++counter}`;
    scripts.set(marker, { c, served: 0 });
    const problems: Problem[] = [];
    const fail = (sig: string, detail: string) => problems.push({ sig, detail });
    try {
      const created = await s.a.createRun({
        input: `go [${marker}]`,
        model: MODELS[c.provider],
        tools: TOOLS,
        limits: { maxIterations: 20, repeatLimit: 100 },
      });
      if (created.status !== 202)
        return [{ sig: `create answered ${created.status}`, detail: created.text.slice(0, 300) }];
      const id = created.json.id as string;
      const { snap, stalled } = await waitTerminal(id, timeoutMs);
      head.set(c, `run ${id} (${snap?.status}, stopReason ${snap?.stopReason}, iteration ${snap?.iteration})`);
      if (stalled) {
        const tail = (await s.a.events(id, { timeoutMs: 1_000 })).events
          .slice(-6)
          .map((e) => `${e.seq} ${e.type} ${JSON.stringify(e.data).slice(0, 160)}`);
        return [
          {
            sig: `stalled (not finished in time, status ${snap?.status})`,
            detail: `not finished after ${timeoutMs} ms; last snapshot: ${JSON.stringify(snap).slice(0, 800)}; last events: ${tail.join(' | ')}`,
          },
        ];
      }
      if (snap!.status !== 'completed')
        fail(
          `status ${snap!.status}: ${snap!.error?.code} ${normalize(snap!.error?.message ?? '')}`,
          `error ${JSON.stringify(snap!.error)}`,
        );

      // the stored history: the SPEC §2 invariant, unique and safe ids, every call the model made answered once
      const h = await s.a.getRun(id, 'history');
      const history = ((h.json as unknown as { history?: Message[] })?.history ?? []) as Message[];
      if (h.status !== 200 || !Array.isArray(history))
        fail('history unreadable', `${h.status} ${h.text.slice(0, 300)}`);
      for (const p of transcriptProblems(history)) fail(`transcript invariant: ${normalize(p)}`, `${p}`);
      const loopTurns = history.filter((m) => m.role === 'assistant' && m.toolCalls?.length);
      const calls = loopTurns.flatMap((m) => m.toolCalls!);
      const ids = calls.map((x) => x.id);
      const dupes = ids.filter((x, i) => ids.indexOf(x) !== i);
      if (dupes.length) fail('stored call ids not unique', `repeated ${JSON.stringify([...new Set(dupes)])}`);
      const unsafe = ids.filter((x) => typeof x !== 'string' || !SAFE_CALL_ID_RE.test(x));
      if (unsafe.length) fail('stored call id unsafe', `${JSON.stringify(unsafe.map((x) => String(x).slice(0, 80)))}`);
      const results = history.filter((m) => m.role === 'tool');
      for (const x of new Set(ids)) {
        const n = results.filter((m) => m.toolCallId === x).length;
        if (n !== 1) fail('a call not answered exactly once', `call ${x} has ${n} tool messages`);
      }
      if (results.length !== ids.length)
        fail('tool messages != calls', `${results.length} tool messages for ${ids.length} calls`);
      if (snap!.status === 'completed' && snap!.stopReason === 'final_answer') {
        // every call the model sent is in the history (none dropped), in order, batch by batch
        const sent = c.turns.map((t) => t.toolCalls!.length);
        const stored = loopTurns.map((m) => m.toolCalls!.length);
        if (JSON.stringify(sent) !== JSON.stringify(stored))
          fail(
            'calls lost or added',
            `the model sent batches of ${JSON.stringify(sent)} calls, the history has ${JSON.stringify(stored)}`,
          );
      }

      // the event log: seq 1..n gap-free, one terminal event last, every call proposed then ended once
      const ev = await s.a.events(id, { timeoutMs: 10_000 });
      if (!ev.closed) fail('event stream did not close', 'GET /events still open after 10 s');
      const events = ev.events as EventEnvelope[];
      for (const p of checkEvents(events)) fail(`event log: ${normalize(p)}`, `${p}`);
      if (ev.ids.join() !== events.map((_, i) => i + 1).join())
        fail('SSE ids not 1..n', `${ev.ids.slice(0, 50).join(',')}`);
      const evCalls = new Set(events.filter((e) => e.type === 'tool.call').map((e) => String(e.data.callId)));
      if ([...evCalls].sort().join() !== [...new Set(ids)].sort().join())
        fail(
          'tool.call events and history disagree',
          `events ${JSON.stringify([...evCalls])}, history ${JSON.stringify(ids)}`,
        );

      // what the model was sent: accepted, and never a broken pairing
      const mine = s.mock.journal.filter((e: JournalEntry) => markerOf(e.req) === marker);
      for (const e of mine.filter((e) => e.status !== 200 && !e.injected))
        fail(
          `the mock refused a request (${e.status}): ${normalize(e.error ?? '')}`,
          `request #${e.req.seq}: ${e.error?.slice(0, 300)}`,
        );
      for (const e of mine)
        for (const p of pairingProblems(e.req.messages))
          fail(
            `a request pairs calls and results wrongly: ${normalize(p)}`,
            `request #${e.req.seq}: ${p.slice(0, 300)}`,
          );
      if (c.provider === 'google') {
        // the provider's own id goes back to it: each call Gemini gave an id comes back with that id
        const last = mine.filter((e) => e.status === 200 && e.req.tools.length).at(-1);
        const back = (last?.req.messages ?? [])
          .filter((m) => m.role === 'assistant' && m.toolCalls?.length)
          .map((m) => m.toolCalls!.map((x) => x.id));
        // the request holds the newest turns: older ones may have been summarized away (context compression)
        const offset = c.turns.length - back.length;
        back.forEach((ids, j) => {
          const i = offset + j;
          const t = c.turns[i];
          // (a batch whose calls were lost or added is reported as such above)
          t?.toolCalls!.forEach((tc, k) => {
            if (tc.id && ids.length === t.toolCalls!.length && ids[k] !== tc.id)
              fail(
                'Gemini did not get its own call id back',
                `turn ${i + 1} call ${k + 1}: sent ${JSON.stringify(tc.id.slice(0, 80))}, got back ${JSON.stringify(ids[k]?.slice(0, 80))}`,
              );
          });
        });
      }
      stats.iterations += loopTurns.length;
      stats.calls += calls.length;
      return problems;
    } catch (e) {
      return [
        ...problems,
        {
          sig: `test error: ${normalize(String((e as Error)?.message ?? e))}`,
          detail: String((e as Error)?.stack ?? e).slice(0, 600),
        },
      ];
    } finally {
      scripts.delete(marker);
      // the journal keeps every request body (megabytes here): drop this run's entries
      const keep = s.mock.journal.filter((e) => markerOf(e.req) !== marker);
      s.mock.journal.splice(0, s.mock.journal.length, ...keep);
    }
  }

  async function pool<T, R>(items: T[], n: number, fn: (x: T) => Promise<R>): Promise<R[]> {
    const out: R[] = new Array(items.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(n, items.length) }, async () => {
        while (next < items.length) {
          const i = next++;
          out[i] = await fn(items[i]!);
        }
      }),
    );
    return out;
  }

  /** Smaller variants of a case, the most reducing first. */
  function* shrinks(c: Case): Generator<Case> {
    const withTurns = (turns: ReplySpec[]): Case => ({ ...c, turns });
    const setCall = (ti: number, k: number, tc: MockToolCall) =>
      withTurns(
        c.turns.map((t, i) => (i === ti ? { ...t, toolCalls: t.toolCalls!.map((x, j) => (j === k ? tc : x)) } : t)),
      );
    for (let i = 0; i < c.turns.length && c.turns.length > 1; i++) yield withTurns(c.turns.filter((_, j) => j !== i));
    for (let i = 0; i < c.turns.length; i++) {
      const t = c.turns[i]!;
      if (t.toolCalls!.length > 1)
        for (let k = 0; k < t.toolCalls!.length; k++)
          yield withTurns(
            c.turns.map((x, j) => (j === i ? { ...x, toolCalls: x.toolCalls!.filter((_, m) => m !== k) } : x)),
          );
    }
    for (let i = 0; i < c.turns.length; i++)
      if (c.turns[i]!.chunking !== 'whole')
        yield withTurns(c.turns.map((x, j) => (j === i ? { ...x, chunking: 'whole' } : x)));
    for (let i = 0; i < c.turns.length; i++) {
      const tcs = c.turns[i]!.toolCalls!;
      for (let k = 0; k < tcs.length; k++) {
        const tc = tcs[k]!;
        if (argText(tc) !== '{"expression":"1+1"}')
          yield setCall(i, k, { name: tc.name, id: tc.id, args: { expression: '1+1' } });
        const a = tc.arguments;
        if (a !== undefined && a.length > 200) {
          // a shorter text of the same kind: nesting kept to the depth that matters (64), sizes halved
          const half = a.slice(0, Math.ceil(a.length / 2)) + a.slice(a.length - Math.floor(a.length / 4));
          // (Gemini's args are an object: a halved text that no longer is one is not a case Gemini can send)
          if (c.provider !== 'google' || isJsonObjectText(half))
            yield setCall(i, k, { name: tc.name, id: tc.id, arguments: half });
        }
        if (tc.id !== null && tc.id !== undefined && tc.id !== 'a') yield setCall(i, k, { ...tc, id: 'a' });
        if (tc.id !== null) yield setCall(i, k, { ...tc, id: null });
        if (tc.name !== 'calculator') yield setCall(i, k, { ...tc, name: 'calculator' });
      }
    }
  }

  /** Greedy reduction of a failing case to a smaller one with the same failure. */
  async function reduce(c: Case, sig: string, deadline: number): Promise<{ minimal: Case; runs: number }> {
    let best = c;
    let runs = 0;
    for (let progress = true; progress && runs < REDUCE_RUNS && Date.now() < deadline;) {
      progress = false;
      const candidates = [...shrinks(best)];
      for (let i = 0; i < candidates.length && runs < REDUCE_RUNS && Date.now() < deadline; i += PARALLEL) {
        const group = candidates.slice(i, i + PARALLEL);
        runs += group.length;
        const outcome = await Promise.all(group.map((x) => runCase(x, REDUCE_RUN_TIMEOUT_MS)));
        const hit = group.findIndex((_, k) => outcome[k]!.some((p) => p.sig === sig));
        if (hit >= 0) {
          best = group[hit]!;
          progress = true;
          break;
        }
      }
    }
    return { minimal: best, runs };
  }

  it(
    `${NUM_RUNS} generated models (OpenAI Chat and Responses in every chunking mode, and Gemini): every run completes with a valid, safely identified history`,
    async () => {
      const t0 = Date.now();
      const cases: Case[] = REPLAY
        ? JSON.parse(fs.readFileSync(REPLAY, 'utf8'))
        : fc.sample(genCase, { numRuns: NUM_RUNS, seed: SEED });
      const outcomes = await pool(cases, PARALLEL, async (c) => {
        const problems = await runCase(c);
        stats.runs++;
        stats[c.provider]++;
        return problems;
      });
      const runMs = Date.now() - t0;
      const { iterations, calls } = stats; // of the generated runs (reducing runs below add to stats)

      // group the failing runs by their first broken property; reduce the smallest case of each group
      const bySig = new Map<string, Array<{ c: Case; problems: Problem[] }>>();
      outcomes.forEach((problems, i) => {
        if (problems.length)
          bySig.set(problems[0]!.sig, [...(bySig.get(problems[0]!.sig) ?? []), { c: cases[i]!, problems }]);
      });
      const size = (c: Case) =>
        c.turns.reduce((n, t) => n + t.toolCalls!.reduce((m, tc) => m + 1 + argText(tc).length / 1000, 0), 0);
      const end = Date.now() + REDUCE_BUDGET_MS;
      const report: string[] = [];
      const dump: Record<string, Case> = {};
      // stalls last: each of their reducing runs waits out a timeout
      const groups = [...bySig].sort(([a], [b]) => Number(a.startsWith('stalled')) - Number(b.startsWith('stalled')));
      for (const [i, [sig, group]] of groups.entries()) {
        const { c: smallest, problems } = [...group].sort((x, y) => size(x.c) - size(y.c))[0]!;
        const deadline = Date.now() + (end - Date.now()) / (groups.length - i); // an equal share of what is left
        const { minimal, runs } =
          Date.now() < deadline && !REPLAY ? await reduce(smallest, sig, deadline) : { minimal: smallest, runs: 0 };
        stats.reduceRuns += runs;
        dump[sig] = minimal;
        // other properties these runs broke as well (often consequences of the first one)
        const also = new Map<string, number>();
        const shown = new Set(problems.map((p) => p.sig));
        for (const g of group)
          for (const x of new Set(g.problems.map((p) => p.sig))) if (!shown.has(x)) also.set(x, (also.get(x) ?? 0) + 1);
        const lines = [...new Set(problems.map((p) => `    - ${p.detail.slice(0, 400)}`))];
        report.push(
          `✗ ${sig}\n  first broken property in ${group.length} of ${cases.length} runs; what the smallest of them broke:\n${lines.slice(0, 6).join('\n')}${lines.length > 6 ? `\n    - … and ${lines.length - 6} more` : ''}\n` +
            (also.size
              ? `  these runs also broke:\n${[...also].map(([x, n]) => `    - ${x} (${n} runs)`).join('\n')}\n`
              : '') +
            `  smallest reproduction found (${runs} reducing runs):\n  ${describeCase(minimal).replace(/\n/g, '\n  ')}`,
        );
      }
      if (DUMP && bySig.size) fs.writeFileSync(DUMP, JSON.stringify(dump, null, 1));
      console.info(
        `model-output fuzz: seed ${SEED}, ${stats.runs} runs (${stats.openai} openai chat, ${stats.responses} openai responses, ${stats.google} google), ${iterations} tool-calling iterations and ${calls} calls stored; ` +
          `generated: ${coverage(cases)}; ` +
          `${runMs} ms (+${Date.now() - t0 - runMs} ms reducing in ${stats.reduceRuns} runs), ${bySig.size} distinct failures`,
      );
      expect(report.join('\n\n'), `seed ${SEED} (AGENTLOOP_FUZZ_SEED=${SEED} reproduces)`).toBe('');
    },
    RUN_TIMEOUT_MS * 2 + REDUCE_BUDGET_MS + 180_000,
  );
});
