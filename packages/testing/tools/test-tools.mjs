// Tool module for agentloop's own tests (loaded through AGENTLOOP_TOOL_MODULES). Side effects are appended,
// one JSON line each, to the file named by AGENTLOOP_TEST_EFFECT_LOG so tests can count executions per key.
import { appendFileSync } from 'node:fs';

const effect = (entry) => {
  const file = process.env.AGENTLOOP_TEST_EFFECT_LOG;
  if (file) appendFileSync(file, `${JSON.stringify({ ...entry, pid: process.pid })}\n`);
};

const wait = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });

export default [
  {
    name: 'effect',
    description: 'Performs a reversible side effect keyed by the idempotency key; takes ms milliseconds.',
    parameters: {
      type: 'object',
      properties: { ms: { type: 'integer', minimum: 0 }, label: { type: 'string' } },
      additionalProperties: false,
    },
    sideEffect: 'reversible',
    timeoutMs: 120000,
    async execute(args, ctx) {
      effect({ tool: 'effect', key: ctx.idempotencyKey, phase: 'start', label: args.label ?? null });
      await wait(args.ms ?? 0, ctx.signal);
      effect({ tool: 'effect', key: ctx.idempotencyKey, phase: 'end', label: args.label ?? null });
      return { done: true, key: ctx.idempotencyKey };
    },
  },
  {
    name: 'effect_once',
    description: 'A side effect that must never be retried after a crash (retry: never).',
    parameters: { type: 'object', properties: { ms: { type: 'integer', minimum: 0 } }, additionalProperties: false },
    sideEffect: 'reversible',
    retry: 'never',
    timeoutMs: 120000,
    async execute(args, ctx) {
      effect({ tool: 'effect_once', key: ctx.idempotencyKey, phase: 'start' });
      await wait(args.ms ?? 0, ctx.signal);
      effect({ tool: 'effect_once', key: ctx.idempotencyKey, phase: 'end' });
      return { done: true };
    },
  },
  {
    name: 'lookup',
    description: 'Returns the key in upper case.',
    parameters: {
      type: 'object',
      properties: { key: { type: 'string' } },
      required: ['key'],
      additionalProperties: false,
    },
    sideEffect: 'read',
    timeoutMs: 5000,
    async execute(args, ctx) {
      effect({ tool: 'lookup', key: ctx.idempotencyKey, phase: 'read' }); // executions counted (a read has no effect)
      return { value: String(args.key).toUpperCase() };
    },
  },
  {
    name: 'local_effect',
    description: 'A short side effect run locally, in the orchestrator (pool "local", retry: safe).',
    parameters: {
      type: 'object',
      properties: { ms: { type: 'integer', minimum: 0 }, label: { type: 'string' } },
      additionalProperties: false,
    },
    sideEffect: 'reversible',
    pool: 'local',
    timeoutMs: 5000,
    async execute(args, ctx) {
      effect({ tool: 'local_effect', key: ctx.idempotencyKey, label: args.label, phase: 'start' });
      await wait(args.ms ?? 0, ctx.signal);
      effect({ tool: 'local_effect', key: ctx.idempotencyKey, label: args.label, phase: 'end' });
      return { done: args.label ?? true };
    },
  },
  {
    name: 'local_read',
    description: 'A read run locally (pool "local", retry: safe): returns a text of n characters.',
    parameters: {
      type: 'object',
      properties: { n: { type: 'integer', minimum: 0 } },
      required: ['n'],
      additionalProperties: false,
    },
    sideEffect: 'read',
    pool: 'local',
    timeoutMs: 5000,
    async execute(args, ctx) {
      effect({ tool: 'local_read', key: ctx.idempotencyKey, phase: 'read' }); // executions counted (a read has no effect)
      return 'x'.repeat(args.n);
    },
  },
  {
    name: 'local_once',
    description: 'A short side effect run locally that must never be retried after a crash (retry: never).',
    parameters: { type: 'object', properties: { ms: { type: 'integer', minimum: 0 } }, additionalProperties: false },
    sideEffect: 'reversible',
    pool: 'local',
    retry: 'never',
    timeoutMs: 5000,
    async execute(args, ctx) {
      effect({ tool: 'local_once', key: ctx.idempotencyKey, phase: 'start' });
      await wait(args.ms ?? 0, ctx.signal);
      effect({ tool: 'local_once', key: ctx.idempotencyKey, phase: 'end' });
      return { done: true };
    },
  },
  {
    name: 'kill_runner',
    description: 'Kills the process executing it (a tool that crashes its runner every time).',
    parameters: { type: 'object', properties: {} },
    sideEffect: 'reversible',
    async execute(_args, ctx) {
      effect({ tool: 'kill_runner', key: ctx.idempotencyKey, phase: 'start' });
      process.kill(process.pid, 'SIGKILL');
      await new Promise(() => {});
    },
  },
  {
    name: 'fail',
    description: 'Always throws.',
    parameters: { type: 'object', properties: {} },
    sideEffect: 'read',
    async execute() {
      throw new Error('this tool always fails');
    },
  },
  {
    name: 'slow',
    description: 'Waits longer than its timeout.',
    parameters: { type: 'object', properties: {} },
    sideEffect: 'read',
    timeoutMs: 200,
    async execute(_args, ctx) {
      await wait(5000, ctx.signal);
      return 'never';
    },
  },
  {
    name: 'big',
    description: 'Returns a text of n characters.',
    parameters: { type: 'object', properties: { n: { type: 'integer', minimum: 0 } }, required: ['n'] },
    sideEffect: 'read',
    async execute(args) {
      return 'x'.repeat(args.n);
    },
  },
  {
    name: 'wipe_disk',
    description: 'Irreversible (critical side effect: always needs approval).',
    parameters: { type: 'object', properties: { disk: { type: 'string' } }, required: ['disk'] },
    sideEffect: 'critical',
    async execute(args, ctx) {
      effect({ tool: 'wipe_disk', key: ctx.idempotencyKey, disk: args.disk });
      return { wiped: args.disk };
    },
  },
  {
    name: 'send_email',
    description: 'Sends an email (external side effect).',
    parameters: {
      type: 'object',
      properties: { to: { type: 'string', pattern: '^[^@]+@[^@]+$' }, body: { type: 'string' } },
      required: ['to'],
      additionalProperties: false,
    },
    sideEffect: 'external',
    async execute(args, ctx) {
      effect({ tool: 'send_email', key: ctx.idempotencyKey, to: args.to, phase: 'send' });
      ctx.logger.info({ to: args.to }, 'email sent'); // a log line of the run (tracing tests: it carries the trace id)
      return { sent: true };
    },
  },
  {
    name: 'offsite',
    description: 'A read-only lookup on a pool of its own ("offsite"), which the test stacks run no tool-runner for.',
    parameters: { type: 'object', properties: { key: { type: 'string' } } },
    sideEffect: 'read',
    pool: 'offsite',
    async execute(args) {
      return { value: `offsite:${args.key}` };
    },
  },
];
