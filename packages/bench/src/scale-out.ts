import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI_MAIN, startMockLlm, stepOf } from '@agentloop/testing';
import { serve } from '@agentloop/cli/serve';

/**
 * Tool-runner scale-out: the same workload (runs whose every iteration calls a 20 ms tool) with 1 and with 2
 * tool-runner processes, each limited to `concurrency` calls at a time, so the tool side is the bottleneck.
 */
export async function scaleOut(redisUrl: string, opts: { runs: number; callsPerRun: number; concurrency: number }) {
  const toolsModule = path.join(os.tmpdir(), `agentloop-bench-wait-${process.pid}.mjs`);
  fs.writeFileSync(
    toolsModule,
    `export default [{ name: 'wait20', description: 'takes 20 ms', parameters: { type: 'object' }, sideEffect: 'read', async execute() { await new Promise((r) => setTimeout(r, 20)); return { ok: true }; } }];\n`,
  );
  const mock = await startMockLlm({
    script: (req) =>
      stepOf(req) < opts.callsPerRun ? { toolCalls: [{ name: 'wait20', args: { i: stepOf(req) } }] } : { text: 'done' },
  });
  const results: Array<{ runners: number; callsPerSecond: number }> = [];
  try {
    for (const runners of [1, 2]) {
      const prefix = `bench-scale-${runners}`;
      const env = {
        ...process.env,
        REDIS_URL: redisUrl,
        AGENTLOOP_PREFIX: prefix,
        AGENTLOOP_PORT: '0',
        AGENTLOOP_HOST: '127.0.0.1',
        AGENTLOOP_AUTH: 'disabled',
        AGENTLOOP_TOOL_MODULES: toolsModule,
        OPENAI_API_KEY: 'sk-bench',
        OPENAI_BASE_URL: `${mock.url}/v1`,
        LOG_LEVEL: 'error',
        AGENTLOOP_TOOL_CONCURRENCY: String(opts.concurrency),
        AGENTLOOP_METRICS_PORT: '0',
      };
      const children: ChildProcess[] = [];
      for (let i = 0; i < runners; i++) {
        const child = spawn(process.execPath, [CLI_MAIN, 'serve', '--role', 'tool-runner'], {
          env,
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        await new Promise<void>((resolve) =>
          child.stdout!.on('data', (d: Buffer) => d.toString().includes('agentloop ready') && resolve()),
        );
        children.push(child);
      }
      const proc = await serve({ roles: ['api', 'orchestrator'], env });
      const body = JSON.stringify({
        input: 'wait',
        model: { provider: 'openai', name: 'gpt-4o-mini' },
        tools: ['wait20'],
        limits: { maxIterations: opts.callsPerRun + 1 },
      });
      const t0 = performance.now();
      const ids = await Promise.all(
        Array.from(
          { length: opts.runs },
          async () =>
            (
              (await (
                await fetch(`${proc.apiUrl}/v1/runs`, {
                  method: 'POST',
                  headers: { 'content-type': 'application/json' },
                  body,
                })
              ).json()) as { id: string }
            ).id,
        ),
      );
      for (const id of ids) {
        for (;;) {
          const s = (await (await fetch(`${proc.apiUrl}/v1/runs/${id}`)).json()) as { status: string };
          if (s.status === 'completed' || s.status === 'failed') break;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      const seconds = (performance.now() - t0) / 1000;
      results.push({ runners, callsPerSecond: (opts.runs * opts.callsPerRun) / seconds });
      await proc.stop();
      for (const c of children) {
        c.kill('SIGTERM');
        await new Promise((r) => c.once('exit', r));
      }
    }
  } finally {
    await mock.close();
    fs.rmSync(toolsModule, { force: true });
  }
  return results;
}
