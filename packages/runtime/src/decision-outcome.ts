import type { Redis } from 'ioredis';
import { wellFormedJson, type DeploymentKeys } from '@agentloop/protocol';
import { parseRunState } from './run-state.js';
import type { ScriptResult } from './scripts.js';
import type { DecisionOutcome, PreparedDecision } from './run-store-types.js';
import type { RunScripts } from './run-scripts.js';
import { decisionEventTemplate } from './event-templates.js';
import { editedBatchMessage } from './batch-edit.js';

/** Decisions for a paused run: `tenant` (null: no check) and `expectIteration` are checked by the step itself. */
export interface DecisionsInput {
  tenant: string | null;
  expectIteration?: number;
  decisions: PreparedDecision[];
  /** Edited arguments by call id (JSON text). */
  edits: Record<string, string>;
}

/**
 * applyDecisions-18.lua: records decisions in one step that also checks what a caller would otherwise read first (the
 * run exists and belongs to the tenant, is paused at the iteration, each call is pending a decision of a fitting kind).
 */
export async function applyDecisions(
  scripts: RunScripts,
  redis: Redis,
  keys: DeploymentKeys,
  runId: string,
  p: DecisionsInput,
): Promise<DecisionOutcome> {
  const rows = p.decisions.map((d) => [
    d.callId,
    d.action,
    d.outcome ? wellFormedJson(d.outcome) : '',
    d.meta ? wellFormedJson(d.meta) : '',
    decisionEventTemplate(d),
  ]);
  // edited arguments rewrite the batch's assistant message here, where JSON keeps its arrays and key order; the
  // script applies it only over the text it was built from (a racing edit of another call: read again)
  for (let attempt = 0; ; attempt++) {
    const edit = Object.keys(p.edits).length ? await editedBatchMessage(redis, keys.run(runId), p.edits) : null;
    const r = decisionOutcome(
      await scripts.statusRun('applyDecisions', runId, () => [
        p.expectIteration ?? '',
        p.tenant ?? '',
        wellFormedJson(rows),
        edit?.text ?? '',
        edit?.index ?? '',
        edit?.sha1 ?? '',
      ]),
    );
    // each stale answer means another edit of the batch committed: all make progress, so a bound this high is never
    // reached by edits alone
    if (r.kind !== 'edit_stale' || attempt >= 100)
      return r.kind === 'edit_stale' ? { kind: 'conflict', callId: Object.keys(p.edits)[0]! } : r;
  }
}

/** What `applyDecisions-18.lua` answered, decoded (its header lists the values of each outcome). */
/** `edit_stale`: the batch's message changed between the read of an edit and its apply (another edit): read it again. */
export function decisionOutcome(r: ScriptResult<'applyDecisions'>): DecisionOutcome | { kind: 'edit_stale' } {
  const kind = r.outcome;
  const rest = r.values.map(String);
  switch (kind) {
    case 'resumed': {
      const names = rest.slice(1, 1 + Number(rest[0]));
      const at = 1 + names.length;
      const n = Number(rest[at]);
      const h: Record<string, string> = {};
      for (let i = at + 1 + n; i + 1 < rest.length; i += 2) h[rest[i]!] = rest[i + 1]!;
      return { kind, names, approved: rest.slice(at + 1, at + 1 + n), state: parseRunState(h)! };
    }
    case 'waiting': {
      const names = rest.slice(1, 1 + Number(rest[0]));
      return { kind, names, remaining: rest.slice(1 + names.length) };
    }
    case 'conflict':
      return { kind, callId: rest[0]! };
    case 'invalid':
      return { kind, callId: rest[0]!, pauseType: rest[1]! };
    case 'not_paused':
      return { kind, status: rest[0] ?? '' };
    case 'not_found':
      return { kind: 'not_found' };
    case 'edit_stale':
      return { kind: 'edit_stale' };
  }
}
