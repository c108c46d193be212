#!/usr/bin/env node
import { COMMON_HELP } from './command.js';
import {
  APPROVE,
  DENY,
  PENDING,
  SUBMIT,
  approveCommand,
  denyCommand,
  pendingCommand,
  submitCommand,
} from './decision-commands.js';
import { EXIT, EXIT_CODES_HELP } from './exit-codes.js';
import { RUN, runCommand } from './run-command.js';
import { RUNS_USAGE, runsCommand } from './runs-commands.js';
import { THREADS_GET, threadsCommand } from './threads-command.js';
import { TOOLS, toolsCommand } from './tools-command.js';

const firstLine = (spec: { usage: string }) => spec.usage.split('\n')[0];

const USAGE = `usage:
  agentloop serve [--role api|orchestrator|tool-runner|compressor ...] [--pools default,sandbox] [--partitions 0,2]
  ${RUN.usage.split('\n').slice(0, 2).join('\n  ')}
  ${RUNS_USAGE}
  ${[PENDING, APPROVE, DENY, SUBMIT, THREADS_GET, TOOLS].map(firstLine).join('\n  ')}

\`agentloop <command> --help\` says more about each.
${COMMON_HELP}

${EXIT_CODES_HELP}`;

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  // the server's modules load only for the command that runs them
  serve: async (args) => (await import('./serve-command.js')).serveCommand(args),
  run: runCommand,
  runs: runsCommand,
  pending: pendingCommand,
  approve: approveCommand,
  deny: denyCommand,
  submit: submitCommand,
  threads: threadsCommand,
  tools: toolsCommand,
};

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd !== undefined && Object.hasOwn(COMMANDS, cmd)) return COMMANDS[cmd]!(rest);
  const asked = cmd === 'help' || cmd === '--help' || cmd === '-h';
  if (asked) console.log(USAGE);
  else console.error(`${cmd === undefined ? '' : `agentloop: unknown command ${JSON.stringify(cmd)}\n\n`}${USAGE}`);
  return asked ? EXIT.completed : EXIT.usage;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`agentloop: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(EXIT.error);
  },
);
