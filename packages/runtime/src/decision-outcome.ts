import { parseRunState } from './run-state.js';
import type { ScriptResult } from './scripts.js';
import type { DecisionOutcome } from './run-store-types.js';

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
