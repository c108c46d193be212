import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';

/** The reference MCP server's entry (`@modelcontextprotocol/server-everything`): `node <it> stdio`, or `streamableHttp`. */
export const EVERYTHING_MAIN = createRequire(import.meta.url).resolve(
  '@modelcontextprotocol/server-everything/dist/index.js',
);

/** server-everything in its Streamable HTTP mode (`PORT` from the environment), once it listens. */
export async function startEverythingHttp(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [EVERYTHING_MAIN, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => d.toString().includes('listening') && resolve());
    child.once('exit', (code) => reject(new Error(`server-everything exited with ${code}`)));
  });
  return child;
}
