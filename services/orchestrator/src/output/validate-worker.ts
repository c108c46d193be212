/**
 * The worker thread of `IsolatedOutputValidator`: compiles tenants' output schemas and checks answers against them,
 * away from the event loop that serves every other run (see isolated-validator.ts).
 */
import { parentPort } from 'node:worker_threads';
import { OutputValidator } from './output-validator.js';
import type { ValidatorReply, ValidatorRequest } from './isolated-validator.js';

const validator = new OutputValidator();

parentPort!.on('message', (req: ValidatorRequest) => {
  let reply: ValidatorReply;
  try {
    if (req.op === 'compile') {
      const c = validator.compile(req.schema);
      reply = c.ok ? { ok: true } : { ok: false, message: c.message };
    } else reply = validator.check(req.schema, req.text);
  } catch (e) {
    reply = { ok: false, message: e instanceof Error ? e.message.slice(0, 500) : String(e) };
  }
  parentPort!.postMessage(reply);
});
parentPort!.postMessage({ ready: true }); // loaded: a task's budget starts now, not at the thread's start
