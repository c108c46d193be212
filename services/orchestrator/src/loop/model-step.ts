import type { CallMode } from '@agentloop/protocol';
import { toolsTokens } from '@agentloop/llm';
import type { IterationDelivery, RunState } from '@agentloop/runtime';
import type { LoopParts } from './loop-parts.js';
import type { Fitted } from './context-gate.js';
import { toolSpecsFor } from './tool-specs.js';
import { ResponseStep } from './response-step.js';
import { isShellCommand, type ShellCommand } from './shell-commands.js';
import type { Confirmation } from './continuations.js';

/** Iteration k's model call: the context fitted, the model streamed, then the step after it (ResponseStep). */
export class ModelStep {
  private readonly response: ResponseStep;

  constructor(private readonly p: LoopParts) {
    this.response = new ResponseStep(p);
  }

  /**
   * Returns the seconds spent waiting on the model, or what the shell must do first (a summary, a delay). `confirm`:
   * the start was predicted (ResponseStep.startPredicted): nothing the call streams is written or used, and no other
   * write is made, before it says 'go'.
   */
  async call(
    delivery: IterationDelivery,
    st: RunState,
    k: number,
    mode: CallMode,
    resumed: boolean,
    knownLength?: number,
    confirm?: Promise<Confirmation>,
  ): Promise<number | ShellCommand> {
    const { p } = this;
    const runId = st.id;
    const request = st.request;
    // what the predicted call streams waits for this before it is written (ModelStreamer)
    const hold = confirm?.then(
      (c) => c === 'go',
      () => false,
    );
    // null: go on; else what the call returns (0: nothing more to do, or run the iteration again)
    const confirmed = async (): Promise<ShellCommand | 0 | null> => {
      const c = confirm ? await confirm : 'go';
      confirm = undefined;
      return c === 'go' ? null : c === 'again' ? { kind: 'again' } : 0;
    };
    // a predicted start whose transcript the cache no longer holds (evicted, or forgotten by a confirmation that did
    // not hold): a read now could run before the start itself (an EVALSHA sent again as EVAL), so it waits first
    if (confirm && (knownLength === undefined || !p.transcripts.holds(runId, knownLength))) {
      const stop = await confirmed();
      if (stop !== null) return stop;
    }
    const first = await p.transcripts.view(st, knownLength);
    if (first.problems.length) {
      const stop = await confirmed();
      if (stop !== null) return stop;
      await p.end.failed(runId, 'state_corrupt', `the transcript violates the pairing invariant: ${first.problems[0]}`);
      return 0;
    }
    let fitted: Fitted | ShellCommand = {
      view: first,
      tools: mode === 'tools' ? await toolSpecsFor(p.catalog, request) : null,
      callMode: mode,
    };
    if (confirm && !p.context.fitsAsIs(request, fitted)) {
      const stop = await confirmed(); // the context gate writes: only under a start that applied
      if (stop !== null) return stop;
    }
    fitted = await p.context.fit(delivery, st, k, fitted);
    if (isShellCommand(fitted)) return fitted;
    const t0 = performance.now();
    for (let contextRetries = 0; ; contextRetries++) {
      const outcome = await p.streamer.stream(st, k, resumed, fitted, confirm && hold);
      const stop = await confirmed();
      if (stop !== null) return stop;
      if (outcome.kind === 'ok') {
        const modelSeconds = (performance.now() - t0) / 1000;
        // calibrating takes an exact count: worth it only once the transcript nears the compression threshold
        if (p.context.nearThreshold(request, fitted))
          p.transcripts.calibrate(
            runId,
            fitted.view.tokens + toolsTokens(fitted.view.counter, fitted.tools),
            outcome.response.usage.promptTokens,
          );
        await this.response.record(delivery, {
          st,
          k,
          callMode: fitted.callMode,
          res: outcome.response,
          tailDeltas: outcome.tailDeltas,
          transcriptLength: fitted.view.historyLength,
        });
        return modelSeconds;
      }
      if (outcome.kind === 'context_length' && contextRetries < 3 && fitted.callMode !== 'context_limit') {
        // The provider counted more than we did: take the next step of the ladder and try once more.
        const next: Fitted | ShellCommand = await p.context.fit(delivery, st, k, fitted, true);
        if (isShellCommand(next)) return next;
        fitted = next;
        continue;
      }
      if (outcome.kind === 'defer') {
        // every model of the chain asks for a long pause: the job waits as a delayed job, not in this worker
        const { provider, name } = request.model;
        if (!outcome.quiet)
          await p.o.store.appendEvents(runId, k, [
            {
              type: 'llm.retry',
              data: {
                provider,
                model: name,
                attempt: 1,
                reason: `rate_limit (deferred ${Math.round(outcome.ms / 1000)} s)`,
                discardOutput: false,
              },
            },
          ]);
        return { kind: 'delay', ms: outcome.ms };
      }
      if (outcome.kind === 'context_length') {
        await p.end.withoutAnswer(
          st,
          k,
          'The conversation no longer fits the model context window, even reduced to the last request; no answer could be produced.',
        );
      }
      return (performance.now() - t0) / 1000;
    }
  }
}
