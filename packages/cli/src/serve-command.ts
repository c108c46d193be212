import { parseArgs } from 'node:util';
import { EXIT } from './exit-codes.js';
import { ROLES, serve, type Role } from './serve.js';

/**
 * `agentloop serve [--role r ...] [--pools a,b] [--partitions 0,2]`: runs the roles until SIGTERM or SIGINT, then
 * drains. `--partitions`: the partitions whose runs this process's workers serve (placement; all by default).
 */
export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      role: { type: 'string', multiple: true },
      pools: { type: 'string', multiple: true },
      partitions: { type: 'string', multiple: true },
    },
    strict: true,
  });
  const roles = (values.role ?? [])
    .flatMap((r) => r.split(','))
    .map((r) => r.trim())
    .filter(Boolean);
  const bad = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
  if (bad.length) {
    console.error(`unknown role(s): ${bad.join(', ')} (roles: ${ROLES.join(', ')})`);
    return EXIT.usage;
  }
  const pools = (values.pools ?? [])
    .flatMap((p) => p.split(','))
    .map((p) => p.trim())
    .filter(Boolean);
  const partitionArgs = (values.partitions ?? []).flatMap((p) => p.split(',')).map((p) => p.trim());
  const partitions = partitionArgs.filter(Boolean).map(Number);
  if (partitionArgs.some((p) => !/^\d{1,2}$/.test(p))) {
    console.error(`--partitions takes partition numbers, e.g. --partitions 0,2 (got ${partitionArgs.join(',')})`);
    return EXIT.usage;
  }
  const proc = await serve({ roles: roles.length ? (roles as Role[]) : [...ROLES], pools, partitions });
  await new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      console.error(`agentloop: ${sig}, draining (up to ${proc.config.drainMs} ms)`);
      proc.stop().then(resolve, resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  return EXIT.completed;
}
