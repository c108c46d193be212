import type { DecisionResponse, RunSnapshot } from '@agentloop/protocol';
import { jsonArgument, printJson, executeCommand } from './command.js';
import { EXIT } from './exit-codes.js';

export const PENDING = {
  name: 'pending',
  usage: `agentloop pending [--json]
  the tenant's paused runs and the calls waiting for a decision`,
  options: {},
} as const;

export const APPROVE = {
  name: 'approve',
  usage: `agentloop approve <run> <call> [--args JSON] [--json]
  approves a paused call; --args replaces its arguments (validated again by the server)`,
  options: { args: { type: 'string' } },
  args: ['run', 'call'],
} as const;

export const DENY = {
  name: 'deny',
  usage: `agentloop deny <run> <call> [--reason text] [--json]
  denies a paused call; the model is told the reason`,
  options: { reason: { type: 'string' } },
  args: ['run', 'call'],
} as const;

export const SUBMIT = {
  name: 'submit',
  usage: `agentloop submit <run> <call> <result JSON> [--error] [--json]
  answers a client tool's call (requires_client_execution) with its result; --error reports it as the tool's error`,
  options: { error: { type: 'boolean', default: false } },
  args: ['run', 'call', 'result JSON'],
} as const;

/** `agentloop pending`: the tenant's paused runs and the calls waiting for a decision. */
export function pendingCommand(args: string[]): Promise<number> {
  return executeCommand(PENDING, args, async ({ client, json }) => {
    const runs: RunSnapshot[] = [];
    for await (const page of client.runs.list({ status: 'paused', limit: 200 })) runs.push(...page.data);
    if (json) {
      printJson(runs.map((r) => ({ id: r.id, pending: r.pending })));
      return EXIT.completed;
    }
    if (!runs.length) console.log('no paused runs');
    for (const run of runs) {
      console.log(`${run.id}  (iteration ${run.iteration}, paused since ${run.updatedAt})`);
      for (const p of run.pending)
        console.log(`  ${p.callId}  ${p.name}  ${p.pauseType}  ${JSON.stringify(p.arguments)}`);
    }
    return EXIT.completed;
  });
}

/** `agentloop approve <run> <call> [--args JSON]` */
export function approveCommand(args: string[]): Promise<number> {
  return executeCommand(APPROVE, args, async (ctx) => {
    const [runId, callId] = ctx.positionals as [string, string];
    const edited = ctx.values.args === undefined ? undefined : jsonArgument(ctx.values.args, '--args');
    return printDecision(
      ctx.json,
      runId,
      await ctx.client.runs.approve(
        runId,
        callId,
        edited === undefined ? {} : { arguments: edited as Record<string, unknown> },
      ),
    );
  });
}

/** `agentloop deny <run> <call> [--reason text]` */
export function denyCommand(args: string[]): Promise<number> {
  return executeCommand(DENY, args, async (ctx) => {
    const [runId, callId] = ctx.positionals as [string, string];
    return printDecision(
      ctx.json,
      runId,
      await ctx.client.runs.deny(runId, callId, ctx.values.reason === undefined ? {} : { reason: ctx.values.reason }),
    );
  });
}

/** `agentloop submit <run> <call> <result JSON> [--error]` */
export function submitCommand(args: string[]): Promise<number> {
  return executeCommand(SUBMIT, args, async (ctx) => {
    const [runId, callId, result] = ctx.positionals as [string, string, string];
    return printDecision(
      ctx.json,
      runId,
      await ctx.client.runs.submitResult(runId, callId, jsonArgument(result, 'the result'), {
        isError: Boolean(ctx.values.error),
      }),
    );
  });
}

function printDecision(json: boolean, runId: string, r: DecisionResponse): number {
  if (json) printJson(r);
  else console.log(r.status === 'resumed' ? `${runId} resumed` : `${runId} waiting for ${r.remaining.join(', ')}`);
  return EXIT.completed;
}
