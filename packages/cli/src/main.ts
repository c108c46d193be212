#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { RUN_USAGE, runCommand } from './run-command.js';
import { EXIT_CODES_HELP } from './exit-codes.js';
import { approveCommand, denyCommand, pendingCommand } from './decision-commands.js';
import { ROLES, serve, type Role } from './serve.js';

const USAGE = `usage:
  agentloop serve [--role api|orchestrator|tool-runner|compressor ...] [--pools default,sandbox]
  ${RUN_USAGE}
  agentloop pending [--json]
  agentloop approve <run> <call> [--args JSON]
  agentloop deny <run> <call> [--reason text]
--url defaults to AGENTLOOP_URL [http://127.0.0.1:8080], --key to AGENTLOOP_API_KEY

${EXIT_CODES_HELP}`;

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case 'serve': {
      const { values } = parseArgs({ args: rest, options: { role: { type: 'string', multiple: true }, pools: { type: 'string', multiple: true } }, strict: true });
      const roles = (values.role ?? []).flatMap((r) => r.split(',')).map((r) => r.trim()).filter(Boolean);
      const bad = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
      if (bad.length) {
        console.error(`unknown role(s): ${bad.join(', ')} (roles: ${ROLES.join(', ')})`);
        return 2;
      }
      const pools = (values.pools ?? []).flatMap((p) => p.split(',')).map((p) => p.trim()).filter(Boolean);
      const proc = await serve({ roles: roles.length ? (roles as Role[]) : [...ROLES], pools });
      await new Promise<void>((resolve) => {
        const stop = (sig: string) => {
          console.error(`agentloop: ${sig}, draining (up to ${proc.config.drainMs} ms)`);
          proc.stop().then(resolve, resolve);
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
      return 0;
    }
    case 'run':
      return runCommand(rest, USAGE);
    case 'pending':
      return pendingCommand(rest);
    case 'approve':
      return approveCommand(rest);
    case 'deny':
      return denyCommand(rest);
    default: {
      const asked = cmd === 'help' || cmd === '--help' || cmd === '-h';
      (asked ? console.log : console.error)(USAGE);
      return asked ? 0 : 2;
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`agentloop: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
