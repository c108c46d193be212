import { printJson, executeCommand } from './command.js';
import { EXIT } from './exit-codes.js';
import { shorten, table } from './format.js';

export const TOOLS = {
  name: 'tools',
  usage: `agentloop tools [--json]
  the tool catalog: each tool's side-effect class (read, reversible, external and critical ones pause for approval
  unless auto-approved) and the pool that runs it; --json adds their parameters (JSON Schema)`,
  options: {},
} as const;

/** `agentloop tools` */
export function toolsCommand(args: string[]): Promise<number> {
  return executeCommand(TOOLS, args, async ({ client, json }) => {
    const tools = await client.tools.list();
    if (json) printJson(tools);
    else
      console.log(
        table(
          ['NAME', 'SIDE EFFECT', 'POOL', 'DESCRIPTION'],
          tools.map((t) => [t.name, t.sideEffect, t.pool, shorten(t.description.replace(/\s+/g, ' '), 80)]),
        ),
      );
    return EXIT.completed;
  });
}
