import { describe, expect, it } from 'vitest';
import { EventDataSchemas } from './events.js';
import { iterationCompletedData, resumedDecision, runResumedData, toolCallData } from './event-data.js';
import { toolErrorOutcome } from './tool-result.js';

describe('event data builders', () => {
  const call = { callId: 'c1', name: 'lookup', arguments: { q: 'a' } };

  it('tool.call: the call, its status, then what answered it (result when completed, else its error) and its duration', () => {
    expect(toolCallData(call, 'proposed')).toEqual({ ...call, status: 'proposed' });
    expect(toolCallData(call, 'completed', { status: 'completed', result: [1], durationMs: 5 })).toEqual({
      ...call,
      status: 'completed',
      result: [1],
      durationMs: 5,
    });
    const failed = toolErrorOutcome('tool_error', 'boom', { durationMs: 2 });
    expect(toolCallData(call, 'error', failed)).toEqual({
      ...call,
      status: 'error',
      error: failed.error,
      durationMs: 2,
    });
    // no member for what is not there: a completed call without result, an edit's original arguments only when edited
    expect(Object.keys(toolCallData(call, 'completed', { status: 'completed' }))).toEqual([
      'callId',
      'name',
      'arguments',
      'status',
    ]);
    const edited = toolCallData({ ...call, arguments: { q: 'b' }, originalArguments: call.arguments }, 'approved');
    expect(Object.keys(edited)).toEqual(['callId', 'name', 'arguments', 'originalArguments', 'status']);
    for (const d of [edited, toolCallData(call, 'error', failed)])
      expect(EventDataSchemas['tool.call'].parse(d)).toEqual(d);
  });

  it('iteration.completed and run.resumed', () => {
    expect(iterationCompletedData(3)).toEqual({ iteration: 3, usage: {} });
    expect(iterationCompletedData(3, { totalTokens: 9 })).toEqual({ iteration: 3, usage: { totalTokens: 9 } });
    expect(runResumedData([resumedDecision('a', 'approve'), resumedDecision('b', 'deny')])).toEqual({
      decisions: [
        { callId: 'a', action: 'approve' },
        { callId: 'b', action: 'deny' },
      ],
    });
  });
});
