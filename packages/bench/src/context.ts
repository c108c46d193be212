import type { Redis } from 'ioredis';
import { ProviderRegistry, SUMMARIZE_SYSTEM } from '@agentloop/llm';
import { CompressorWorker } from '@agentloop/compressor';
import { TranscriptCache } from '@agentloop/orchestrator';
import { RunRequestSchema, newRunId, type Message } from '@agentloop/protocol';
import { Metrics, RunStore, createLogger } from '@agentloop/runtime';
import { startMockLlm } from '@agentloop/testing';
import { percentile } from './stats.js';

const turn = (i: number): Message[] => [
  {
    role: 'assistant',
    content: null,
    toolCalls: [{ id: `c${i}`, name: 'lookup', arguments: JSON.stringify({ key: `k${i}` }) }],
  },
  { role: 'tool', toolCallId: `c${i}`, content: `result ${i}: ${'lorem ipsum dolor sit amet '.repeat(20)}` },
];

function conversation(messages: number): Message[] {
  const out: Message[] = [
    { role: 'system', content: 'You are a careful assistant.' },
    { role: 'user', content: 'Look these up.' },
  ];
  for (let i = 0; out.length < messages; i++) out.push(...turn(i));
  return out;
}

async function seed(store: RunStore, messages: Message[]): Promise<string> {
  const runId = newRunId();
  const request = RunRequestSchema.parse({ input: 'x', model: { provider: 'openai', name: 'gpt-4o-mini' } });
  await store.create({ runId, tenant: 'bench', request, messages, bodyHash: 'h' });
  await store.startIteration(runId, {
    iteration: 1,
    expectPhase: 'queued',
    expectPendingFinal: '',
    callMode: 'tools',
    events: [],
  });
  return runId;
}

/** Token counting cost per iteration (one new result counted) at 10 and at 2,000 messages, and a 100k-token summary. */
export async function contextBench(redis: Redis) {
  const store = new RunStore(redis, 'bench-ctx');
  const counting: Array<{ messages: number; p50: number; p99: number }> = [];
  for (const size of [10, 2000]) {
    const runId = await seed(store, conversation(size));
    const cache = new TranscriptCache(store);
    const st = (await store.load(runId))!;
    await cache.view(st); // warm: the first read counts everything once
    const samples: number[] = [];
    for (let i = 0; i < 200; i++) {
      const length = (await store.messages(runId, 0)).length;
      const msgs = turn(100_000 + i);
      await redis.rpush(store.keys.run(runId).messages, ...msgs.map((m) => JSON.stringify(m)));
      const t0 = performance.now();
      cache.appended(runId, length + 2, msgs);
      const view = await cache.view(st, length + 2);
      if (view.tokens <= 0) throw new Error('nothing counted'); // the exact count (taken after the model call in the loop)
      samples.push((performance.now() - t0) / 1000);
    }
    counting.push({ messages: size, p50: percentile(samples, 50), p99: percentile(samples, 99) });
  }
  const mock = await startMockLlm({
    script: (req) =>
      req.messages[0]?.content === SUMMARIZE_SYSTEM ? { text: '- a summary of the older turns' } : { text: 'x' },
  });
  const metrics = new Metrics();
  const compressor = new CompressorWorker({
    redis,
    prefix: 'bench-ctx',
    store,
    metrics,
    lockMs: 30_000,
    logger: createLogger('error'),
    providers: new ProviderRegistry({ openai: { apiKey: 'k', baseUrl: `${mock.url}/v1` } }),
  });
  const big = conversation(1560); // ≈ 100k tokens
  const runId = await seed(store, big);
  const t0 = performance.now();
  const result = await compressor.compress(runId, 1, 0);
  const seconds = (performance.now() - t0) / 1000;
  await mock.close();
  return { counting, compression: { seconds, result } };
}
