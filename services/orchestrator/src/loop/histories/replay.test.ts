import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '@agentloop/protocol';
import { PURE_PLANNER } from '../planner.js';
import { asStored, planInputOf, type HistoryEntry } from './history.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const versions = fs
  .readdirSync(HERE)
  .filter((d) => /^v\d+$/.test(d))
  .sort();

/** What a plan decides: the transition it records and what follows it (not how the checkpoint is encoded). */
/** Usage counters a newer build may add (a new counter is no new decision): cut to the recorded ones, no further. */
const COUNTERS = new Set(['usage', 'totals', 'iterationUsage']);
function shapedLike(recorded: unknown, v: unknown, key = ''): unknown {
  if (Array.isArray(recorded) && Array.isArray(v)) return v.map((x, i) => shapedLike(recorded[i], x));
  if (!recorded || !v || typeof recorded !== 'object' || typeof v !== 'object') return v;
  const r = recorded as Record<string, unknown>;
  const o = v as Record<string, unknown>;
  const keys = COUNTERS.has(key) ? Object.keys(r) : Object.keys(o);
  return Object.fromEntries(keys.map((k) => [k, shapedLike(r[k], o[k], k)]));
}

function transition(plan: unknown) {
  const p = asStored(plan) as Record<string, any>;
  const c = p.checkpoint ?? {};
  return {
    final: p.final ?? null,
    toRun: p.toRun,
    pause: p.pause?.pending ?? null,
    pendingFinal: c.pendingFinal,
    repeat: c.repeat,
    totals: p.totals,
    calls: (c.calls ?? []).map((x: Record<string, any>) => ({
      id: x.id,
      name: x.meta?.name,
      outcome: x.outcome ? { status: x.outcome.status, code: x.outcome.error?.code ?? null } : null,
    })),
    events: (c.events ?? []).map((e: Record<string, unknown>) => [e.type, e.data]),
  };
}

describe('recorded histories replay through the pure deciders with the same transitions (every schemaVersion)', () => {
  it('has a history for the current schemaVersion', () => {
    expect(versions).toContain(`v${SCHEMA_VERSION}`);
  });
  for (const v of versions) {
    for (const file of fs.readdirSync(path.join(HERE, v)).filter((f) => f.endsWith('.jsonl'))) {
      it(`${v}/${file}`, () => {
        const entries = fs
          .readFileSync(path.join(HERE, v, file), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as HistoryEntry);
        expect(entries.some((e) => e.kind === 'planResponse')).toBe(true);
        for (const [i, e] of entries.entries()) {
          if (e.kind === 'decideAdvance') {
            expect(asStored(PURE_PLANNER.decideAdvance(e.st, e.k, e.nowMs, e.jobId)), `${file} decision ${i}`).toEqual(
              e.action,
            );
          } else {
            const recorded = transition(e.plan);
            expect(
              shapedLike(recorded, transition(PURE_PLANNER.planResponse(planInputOf(e.input)))),
              `${file} decision ${i}`,
            ).toEqual(recorded);
          }
        }
      });
    }
  }
});
