import type { EventEnvelope } from '@agentloop/protocol';

const c = (code: number, s: string) => (process.stdout.isTTY ? `\x1b[${code}m${s}\x1b[0m` : s);
const short = (v: unknown, n = 120) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > n ? `${s.slice(0, n)}…` : s;
};

/** Renders run events for a terminal: tokens as they stream, tool calls with their status, a final usage line. */
export class EventRenderer {
  private midLine = false;
  constructor(private readonly out: (s: string) => void = (s) => process.stdout.write(s)) {}

  private line(s: string): void {
    if (this.midLine) this.out('\n');
    this.midLine = false;
    this.out(`${s}\n`);
  }

  render(e: EventEnvelope): void {
    const d = e.data as Record<string, any>;
    switch (e.type) {
      case 'run.queued':
        return this.line(c(2, `● run ${e.runId} queued`));
      case 'run.started':
        return this.line(c(2, '● started'));
      case 'iteration.started':
        return this.line(c(36, `── iteration ${d.iteration} ──`));
      case 'message.delta':
        this.out(d.text);
        this.midLine = !String(d.text).endsWith('\n');
        return;
      case 'reasoning.delta':
        this.out(c(2, d.text));
        this.midLine = true;
        return;
      case 'tool.call': {
        const status = String(d.status);
        const color = status === 'completed' ? 32 : status === 'proposed' || status === 'running' ? 33 : 31;
        const tail =
          d.result !== undefined
            ? ` → ${short(d.result)}`
            : d.error
              ? ` → ${d.error.code}: ${short(d.error.message)}`
              : '';
        return this.line(
          `${c(color, `⚙ ${d.name} [${status}]`)} ${short(d.arguments, 80)}${tail}${d.durationMs !== undefined ? c(2, ` (${d.durationMs} ms)`) : ''}`,
        );
      }
      case 'run.paused':
        return this.line(
          c(
            35,
            `⏸ paused: ${(d.pending as Array<{ name: string; callId: string }>).map((p) => `${p.name} (${p.callId})`).join(', ')}`,
          ),
        );
      case 'run.resumed':
        return this.line(c(35, '▶ resumed'));
      case 'llm.retry':
        return this.line(
          c(
            33,
            `↻ retry ${d.provider}/${d.model} attempt ${d.attempt}: ${d.reason}${d.discardOutput ? ' (discarding partial output)' : ''}`,
          ),
        );
      case 'llm.fallback':
        return this.line(c(33, `⇢ fallback ${d.from} → ${d.to}: ${d.reason}`));
      case 'context.compressed':
        return this.line(c(2, `⇲ context compressed (${d.strategy}): ${d.tokensBefore} → ${d.tokensAfter} tokens`));
      case 'iteration.completed':
        return;
      case 'output.invalid':
        return this.line(
          c(
            33,
            `✗ answer does not match the output schema${d.repair ? ' (one repair turn follows)' : ''}: ${short((d.errors as string[]).join('; '))}`,
          ),
        );
      case 'run.completed': {
        const u = d.usage ?? {};
        this.line(c(32, `✔ completed (${d.stopReason}) in ${d.iterations} iteration(s)`));
        return this.line(
          c(
            2,
            `usage: ${u.promptTokens} prompt + ${u.completionTokens} completion tokens (${u.reasoningTokens} reasoning), ${u.llmCalls} model calls, ${u.toolCalls} tool calls, $${Number(u.costUsd ?? 0).toFixed(6)}`,
          ),
        );
      }
      case 'run.failed':
        return this.line(c(31, `✖ failed: ${d.error?.code}: ${d.error?.message}`));
      case 'run.cancelled':
        return this.line(c(31, `✖ cancelled: ${d.reason}`));
      default:
        return;
    }
  }
}
