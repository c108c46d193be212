import { createHmac } from 'node:crypto';
import { builtinModules } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import * as esbuild from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepOf } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';

const NODE_BUILTINS = new Set(builtinModules);
/** Node's globals: each free reference to one is replaced by a marker that the test then looks for. */
const NODE_GLOBALS = ['process', 'Buffer', 'global', 'require', '__dirname', '__filename', 'setImmediate'];

/**
 * `import ... from '<entry>'` bundled as a browser bundler does it (platform browser, no Node polyfills), from the
 * e2e package's node_modules as any app would. What Node would have to provide is recorded, not fatal: `nodeImports`
 * (a `node:` or built-in module, with the file that imported it) and `nodeGlobals` (free references to Node's globals).
 */
async function browserBundle(entry: string) {
  const nodeImports: string[] = [];
  const result = await esbuild.build({
    stdin: { contents: `export * from '${entry}';`, resolveDir: path.resolve(import.meta.dirname, '..'), loader: 'js' },
    bundle: true,
    write: false,
    platform: 'browser',
    format: 'iife',
    globalName: 'agentloop',
    metafile: true,
    logLevel: 'silent',
    define: Object.fromEntries(
      NODE_GLOBALS.flatMap((g) => [
        [g, `__NODE_GLOBAL_${g}__`],
        [`globalThis.${g}`, `__NODE_GLOBAL_${g}__`],
      ]),
    ),
    plugins: [
      {
        name: 'record-node-modules',
        setup(build) {
          build.onResolve({ filter: /.*/ }, (args) => {
            if (!args.path.startsWith('node:') && !NODE_BUILTINS.has(args.path.split('/')[0]!)) return undefined;
            nodeImports.push(`${args.path} (imported by ${path.relative(process.cwd(), args.importer)})`);
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  const code = result.outputFiles[0]!.text;
  const nodeGlobals = [...new Set([...code.matchAll(/__NODE_GLOBAL_(\w+)__/g)].map((m) => m[1]!))];
  return { code, nodeImports, nodeGlobals, inputs: Object.keys(result.metafile.inputs) };
}

describe('@agentloop/client in a browser', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({
      script: (req) =>
        stepOf(req) === 0
          ? { toolCalls: [{ name: 'calculator', args: { expression: '6*7' } }] }
          : { text: 'it is 42', chunking: 'fine' },
    });
  }, 30_000);
  afterAll(() => s?.stop());

  it('bundles for the browser with no node: module, no Node global and no bullmq or ioredis', async () => {
    const bundle = await browserBundle('@agentloop/client');
    expect(bundle.nodeImports).toEqual([]);
    expect(bundle.nodeGlobals).toEqual([]);
    expect(bundle.inputs.filter((i) => /\/(bullmq|ioredis)\//.test(i))).toEqual([]);
    // the check sees what it looks for: the Node entry (queue intake) is full of both
    const queue = await browserBundle('@agentloop/client/queue');
    expect(queue.nodeImports.length).toBeGreaterThan(0);
    expect(queue.nodeGlobals).toContain('process');
  }, 60_000);

  it('runs in a realm holding Web APIs only: creates a run, follows its events over fetch, verifies a webhook', async () => {
    const { code } = await browserBundle('@agentloop/client');
    const web = {
      fetch,
      Headers,
      Request,
      Response,
      URL,
      URLSearchParams,
      TextEncoder,
      TextDecoder,
      AbortController,
      AbortSignal,
      ReadableStream,
      DOMException,
      Event,
      EventTarget,
      crypto,
      atob,
      btoa,
      setTimeout,
      clearTimeout,
      queueMicrotask,
      structuredClone,
      console,
    };
    const realm = vm.createContext({ ...web });
    vm.runInContext(code, realm);
    expect(vm.runInContext('typeof process + typeof Buffer + typeof require', realm)).toBe(
      'undefinedundefinedundefined',
    );
    const run = vm.runInContext(
      `(async (baseUrl) => {
      const client = new agentloop.AgentloopClient({ baseUrl, apiKey: 'key-a' });
      const { id } = await client.runs.create({ input: 'what is 6*7?', model: { provider: 'openai', name: 'gpt-4o-mini', api: 'chat' }, tools: ['calculator'] });
      const types = [];
      for await (const e of client.runs.events(id)) types.push(e.type);
      const snapshot = await client.runs.get(id);
      const missing = await client.runs.get('run_nope').catch((e) => ({ name: e.name, status: e.status, code: e.code, isError: e instanceof agentloop.AgentloopError }));
      return { types, snapshot, missing, tools: (await client.tools.list()).map((t) => t.name) };
    })`,
      realm,
    ) as (
      baseUrl: string,
    ) => Promise<{ types: string[]; snapshot: { status: string; output: string }; missing: unknown; tools: string[] }>;
    const r = await run(s.a.baseUrl);
    expect(r.types[0]).toBe('run.queued');
    expect(r.types.at(-1)).toBe('run.completed');
    expect(r.snapshot).toMatchObject({ status: 'completed', output: 'it is 42' });
    expect(r.missing).toEqual({ name: 'AgentloopError', status: 404, code: 'not_found', isError: true });
    expect(r.tools).toContain('calculator');

    const key = Buffer.from('a secret of the tenant, 32 bytes');
    const body = JSON.stringify({
      type: 'run.completed',
      timestamp: new Date().toISOString(),
      data: { runId: 'r', event: { seq: 1, runId: 'r', type: 'run.completed', at: 'x', data: {} }, run: r.snapshot },
    });
    const ts = String(Math.floor(Date.now() / 1000));
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': ts,
      'webhook-signature': `v1,${createHmac('sha256', key).update(`msg_1.${ts}.${body}`).digest('base64')}`,
    };
    const verify = vm.runInContext(
      '(secret, headers, body) => agentloop.webhooks.verify(secret, headers, body).then((b) => b.type, (e) => e.message)',
      realm,
    ) as (...a: unknown[]) => Promise<string>;
    expect(await verify(`whsec_${key.toString('base64')}`, headers, body)).toBe('run.completed');
    expect(
      await verify(`whsec_${key.toString('base64')}`, headers, body.replace('run.completed', 'run.failed')),
    ).toMatch(/no webhook-signature matches/);
  }, 60_000);
});
