import readline from 'node:readline/promises';
import type { PendingCall } from '@agentloop/protocol';
import { api, describeError } from './http-options.js';

/**
 * `run --follow` in a terminal: when the run pauses, ask for each pending call — approve (optionally with edited
 * arguments), deny with a reason, or the result of a client tool — and send the decisions.
 */
export async function promptDecisions(url: string, key: string | undefined, runId: string, pending: PendingCall[]): Promise<void> {
  if (!process.stdin.isTTY) {
    console.log(`run paused: decide with \`agentloop approve ${runId} <call>\` or \`agentloop deny ${runId} <call> --reason ...\``);
    return;
  }
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
  try {
    for (const p of pending) {
      const decision = await askOne(rl, p);
      for (;;) {
        const r = await api(url, key, 'POST', `/v1/runs/${runId}/decisions`, { decisions: [decision] });
        if (r.status === 202 || r.status === 409) break;
        console.log(`  ${describeError(r)}`);
        Object.assign(decision, await askOne(rl, p));
      }
    }
  } finally {
    rl.close();
  }
}

async function askOne(rl: readline.Interface, p: PendingCall): Promise<Record<string, unknown>> {
  console.log(`\n? ${p.name} ${JSON.stringify(p.arguments)} (${p.pauseType}, call ${p.callId})`);
  if (p.pauseType === 'requires_client_execution') {
    for (;;) {
      const text = await rl.question('  result JSON (prefix with ! to report an error): ');
      const isError = text.startsWith('!');
      const raw = isError ? text.slice(1) : text;
      try {
        return { callId: p.callId, action: 'submit_result', result: JSON.parse(raw), isError };
      } catch {
        if (isError) return { callId: p.callId, action: 'submit_result', result: raw, isError };
        console.log('  not JSON; try again');
      }
    }
  }
  for (;;) {
    const a = (await rl.question('  [a]pprove, [e]dit arguments and approve, [d]eny? ')).trim().toLowerCase();
    if (a === 'a' || a === 'approve') return { callId: p.callId, action: 'approve' };
    if (a === 'd' || a === 'deny') return { callId: p.callId, action: 'deny', reason: (await rl.question('  reason: ')).trim() || undefined };
    if (a === 'e' || a === 'edit') {
      const text = await rl.question('  arguments JSON: ');
      try {
        return { callId: p.callId, action: 'approve', arguments: JSON.parse(text) };
      } catch {
        console.log('  not JSON');
      }
    }
  }
}
