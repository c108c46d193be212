import { RunStatusSchema, type RunSnapshot } from '@agentloop/protocol';
import type { RunInclude } from '@agentloop/client';
import { UsageError, positiveInt, printJson, executeCommand } from './command.js';
import { EXIT } from './exit-codes.js';
import { describeRun, shorten, table } from './format.js';
import { RUNS_EVENTS, runsEventsCommand } from './runs-events-command.js';

const RUNS_LIST = {
  name: 'runs list',
  usage: `agentloop runs list [--status queued|running|paused|completed|failed|cancelled] [--limit N] [--json]
  the tenant's runs, newest first: at most --limit of them [50], read a page at a time`,
  options: { status: { type: 'string' }, limit: { type: 'string' } },
} as const;

const RUNS_GET = {
  name: 'runs get',
  usage: `agentloop runs get <run> [--include messages|history] [--json]
  a run's snapshot; --include messages adds the transcript as the model sees it next, history every message ever
  appended (both: --include messages,history)`,
  options: { include: { type: 'string' } },
  args: ['run'],
} as const;

const RUNS_CANCEL = {
  name: 'runs cancel',
  usage: `agentloop runs cancel <run> [--json]
  cancels a run: a queued or paused run ends at once (cancelled), a running one stops at its next step (cancelling)`,
  options: {},
  args: ['run'],
} as const;

const SUBCOMMANDS = { list: RUNS_LIST, get: RUNS_GET, events: RUNS_EVENTS, cancel: RUNS_CANCEL } as const;

export const RUNS_USAGE = Object.values(SUBCOMMANDS)
  .map((c) => c.usage.split('\n')[0])
  .join('\n  ');

/** `agentloop runs <list|get|events|cancel> ...` */
export async function runsCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'list':
      return executeCommand(RUNS_LIST, rest, async ({ values, client, json }) => {
        const status = values.status === undefined ? undefined : RunStatusSchema.safeParse(values.status);
        if (status && !status.success) throw new UsageError(`--status is one of ${RunStatusSchema.options.join(', ')}`);
        const limit = positiveInt(values.limit, '--limit', 50);
        const runs: RunSnapshot[] = [];
        for await (const page of client.runs.list({ status: status?.data, limit: Math.min(limit, 200) })) {
          runs.push(...page.data.slice(0, limit - runs.length));
          if (runs.length >= limit) break;
        }
        if (json) printJson(runs);
        else if (!runs.length) console.error('no runs');
        else console.log(table(['ID', 'STATUS', 'ITER', 'MODEL', 'STOP', 'CREATED', 'PENDING'], runs.map(runRow)));
        return EXIT.completed;
      });
    case 'get':
      return executeCommand(RUNS_GET, rest, async ({ values, positionals, client, json }) => {
        const include = (values.include ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        const bad = include.filter((i) => i !== 'messages' && i !== 'history');
        if (bad.length) throw new UsageError(`--include takes messages and/or history, not ${bad.join(', ')}`);
        const run = await client.runs.get(positionals[0]!, { include: include as RunInclude[] });
        if (json) printJson(run);
        else console.log(describeRun(run));
        return EXIT.completed;
      });
    case 'events':
      return runsEventsCommand(rest);
    case 'cancel':
      return executeCommand(RUNS_CANCEL, rest, async ({ positionals, client, json }) => {
        const r = await client.runs.cancel(positionals[0]!);
        if (json) printJson(r);
        else console.log(`${r.id} ${r.status}`);
        return EXIT.completed;
      });
    default: {
      const asked = sub === 'help' || sub === '--help' || sub === '-h';
      const text = `usage:\n  ${RUNS_USAGE}\n\n\`agentloop runs <command> --help\` says more about each.`;
      if (asked) console.log(text);
      else
        console.error(
          `agentloop runs: ${sub === undefined ? 'which command?' : `unknown command ${JSON.stringify(sub)}`}\n\n${text}`,
        );
      return asked ? EXIT.completed : EXIT.usage;
    }
  }
}

function runRow(r: RunSnapshot): string[] {
  return [
    r.id,
    r.status,
    String(r.iteration),
    shorten(`${r.model.provider}/${r.model.name}`, 40),
    r.stopReason ?? r.error?.code ?? '',
    r.createdAt,
    r.pending.map((p) => p.name).join(','),
  ];
}
