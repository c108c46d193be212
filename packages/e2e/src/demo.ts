import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  CLI_MAIN,
  RedisServer,
  cleanupPrefix,
  demoAgentScript,
  redisReachable,
  startMockLlm,
} from '@agentloop/testing';
import { runCommand } from '@agentloop/cli/run-command';

const MAIN = CLI_MAIN;

/** The Quick start demo: Redis, the mock model, `agentloop serve` as its own process, and a live multi-iteration run. */
async function demo(): Promise<number> {
  let redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  let ownRedis: RedisServer | null = null;
  if (!(await redisReachable(redisUrl))) {
    console.log(`demo: no Redis at ${redisUrl}; starting redis-server`);
    ownRedis = await RedisServer.start();
    redisUrl = ownRedis.url;
  }
  const mock = await startMockLlm({ script: demoAgentScript({ delayMs: 12 }) });
  const prefix = `demo-${randomBytes(3).toString('hex')}`;
  console.log(`demo: mock model at ${mock.url}, Redis at ${redisUrl}, prefix ${prefix}`);
  const child = spawn(process.execPath, [MAIN, 'serve'], {
    env: {
      ...process.env,
      REDIS_URL: redisUrl,
      AGENTLOOP_PREFIX: prefix,
      AGENTLOOP_PORT: '0',
      AGENTLOOP_HOST: '127.0.0.1',
      AGENTLOOP_API_KEYS: 'demo-key=demo',
      OPENAI_API_KEY: 'sk-demo',
      OPENAI_BASE_URL: `${mock.url}/v1`,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let buf = '';
      child.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        process.stdout.write(`serve: ${d.toString()}`);
        const m = /agentloop api listening on (\S+)/.exec(buf);
        if (m) resolve(m[1]!);
      });
      child.once('exit', (code) => reject(new Error(`agentloop serve exited with code ${code}`)));
    });
    const prompt = 'What is 17*23 and (2+3)*4, and what time is it in Tokyo?';
    console.log(`\n$ agentloop run "${prompt}" --tools calculator,current_time --follow\n`);
    const code = await runCommand([
      prompt,
      '--tools',
      'calculator,current_time',
      '--follow',
      '--url',
      url,
      '--key',
      'demo-key',
    ]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    console.log('\nmetrics (excerpt):');
    for (const line of metrics.split('\n'))
      if (/^agentloop_(loop_iterations_total|tool_calls_total|runs_finished_total)/.test(line))
        console.log(`  ${line}`);
    console.log(`\nmock model answered ${mock.requests.length} requests`);
    return code;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await mock.close();
    const r = new Redis(redisUrl);
    await cleanupPrefix(r, prefix).catch(() => {});
    r.disconnect();
    await ownRedis?.stop();
  }
}

demo().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`demo failed: ${err instanceof Error ? err.stack : err}`);
    process.exit(1);
  },
);
