import { parseArgs } from 'node:util';
import { HTTP_OPTIONS, api, describeError } from './http-options.js';

/** `agentloop pending`: the tenant's paused runs and the calls waiting for a decision. */
export async function pendingCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { ...HTTP_OPTIONS, json: { type: 'boolean', default: false } } });
  const runs: any[] = [];
  let cursor: string | null = '';
  do {
    const r = await api(values.url, values.key, 'GET', `/v1/runs?status=paused&limit=200${cursor ? `&cursor=${cursor}` : ''}`);
    if (r.status !== 200) {
      console.error(`agentloop pending: ${describeError(r)}`);
      return 1;
    }
    runs.push(...r.json.data);
    cursor = r.json.nextCursor;
  } while (cursor);
  if (values.json) {
    console.log(JSON.stringify(runs.map((r) => ({ id: r.id, pending: r.pending })), null, 2));
    return 0;
  }
  if (!runs.length) console.log('no paused runs');
  for (const run of runs) {
    console.log(`${run.id}  (iteration ${run.iteration}, paused since ${run.updatedAt})`);
    for (const p of run.pending) console.log(`  ${p.callId}  ${p.name}  ${p.pauseType}  ${JSON.stringify(p.arguments)}`);
  }
  return 0;
}

async function decide(values: { url: string; key?: string }, runId: string, decision: Record<string, unknown>, what: string): Promise<number> {
  const r = await api(values.url, values.key, 'POST', `/v1/runs/${runId}/decisions`, { decisions: [decision] });
  if (r.status !== 202) {
    console.error(`agentloop ${what}: ${describeError(r)}`);
    return 1;
  }
  console.log(r.json.status === 'resumed' ? `${runId} resumed` : `${runId} waiting for ${r.json.remaining.join(', ')}`);
  return 0;
}

/** `agentloop approve <run> <call> [--args JSON]` */
export async function approveCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { ...HTTP_OPTIONS, args: { type: 'string' } } });
  const [runId, callId] = positionals;
  if (!runId || !callId) {
    console.error('usage: agentloop approve <run> <call> [--args JSON]');
    return 2;
  }
  const decision: Record<string, unknown> = { callId, action: 'approve' };
  if (values.args) {
    try {
      decision.arguments = JSON.parse(values.args);
    } catch {
      console.error('agentloop approve: --args is not valid JSON');
      return 2;
    }
  }
  return decide(values, runId, decision, 'approve');
}

/** `agentloop deny <run> <call> --reason ...` */
export async function denyCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { ...HTTP_OPTIONS, reason: { type: 'string' } } });
  const [runId, callId] = positionals;
  if (!runId || !callId) {
    console.error('usage: agentloop deny <run> <call> --reason "..."');
    return 2;
  }
  return decide(values, runId, { callId, action: 'deny', ...(values.reason ? { reason: values.reason } : {}) }, 'deny');
}
