import { printJson, executeCommand } from './command.js';
import { EXIT } from './exit-codes.js';
import { messageLine } from './format.js';

export const THREADS_GET = {
  name: 'threads get',
  usage: `agentloop threads get <thread> [--json]
  a thread: its runs, oldest first, and its conversation so far`,
  options: {},
  args: ['thread'],
} as const;

/** `agentloop threads get <thread>` */
export function threadsCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'get') {
    const asked = sub === 'help' || sub === '--help' || sub === '-h';
    (asked ? console.log : console.error)(`usage: ${THREADS_GET.usage.split('\n')[0]}`);
    return Promise.resolve(asked ? EXIT.completed : EXIT.usage);
  }
  return executeCommand(THREADS_GET, rest, async ({ positionals, client, json }) => {
    const thread = await client.threads.get(positionals[0]!);
    if (json) printJson(thread);
    else
      console.log(
        [
          `thread:    ${thread.id}`,
          `runs:      ${thread.runs.join(', ')}`,
          `messages (${thread.messages.length}):`,
          ...thread.messages.map(messageLine),
        ].join('\n'),
      );
    return EXIT.completed;
  });
}
