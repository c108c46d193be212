// Tools with `isolation: "process"` that misbehave in every way a child process can: each call runs in a child of
// its own (services/tool-runner/src/isolation), and none of this may reach the tool-runner.
const inChild = () => (process.argv[1] ?? '').includes('child-entry');

/** Matched by its name in the child (the tool-runner's class is not shared across processes). */
class ToolFailure extends Error {
  constructor(code, message, retryable) {
    super(message);
    this.code = code;
    this.retryable = retryable;
  }
}

const tool = (name, execute, extra = {}) => ({
  name,
  sideEffect: 'read',
  parameters: { type: 'object' },
  isolation: 'process',
  execute,
  ...extra,
});

export default [
  tool('whoami', (args, ctx) => {
    ctx.logger.info({ fromChild: process.pid }, 'hello from the child');
    ctx.logger.warn(new Error('a logged error'));
    return {
      pid: process.pid,
      ppid: process.ppid,
      args,
      ctx: {
        runId: ctx.runId,
        callId: ctx.callId,
        tenantId: ctx.tenantId,
        idempotencyKey: ctx.idempotencyKey,
        aborted: ctx.signal.aborted,
      },
    };
  }),
  tool('hog', () => {
    const kept = [];
    for (;;) kept.push(new Array(100_000).fill(Math.random()));
  }),
  tool(
    'spin',
    (_args, ctx) => {
      ctx.logger.info({ pid: process.pid }, 'spinning');
      for (;;);
    },
    { timeoutMs: 3_000 },
  ),
  tool(
    'wait_forever',
    (_args, ctx) => {
      ctx.logger.info({ pid: process.pid }, 'waiting');
      return new Promise(() => undefined);
    },
    { timeoutMs: 60_000 },
  ),
  tool('exits', () => process.exit(3)),
  tool(
    'throws_later',
    () =>
      new Promise(() =>
        setTimeout(() => {
          throw new Error('boom in a timer');
        }, 10),
      ),
  ),
  tool('throws', () => {
    throw new Error('plain failure');
  }),
  tool('fails_with_code', () => {
    throw new ToolFailure('blocked_url', 'not that address', false);
  }),
  tool('unserializable', () => ({ n: 10n })),
  tool('huge_answer', () => 'x'.repeat(50_000)),
];

// a module that loads in the runner but throws at its top level in the child: the call is a tool_error
if (inChild() && process.env.AGENTLOOP_TEST_ISOLATED_LOAD_FAILS === '1') throw new Error('cannot load here');
