import readline from 'node:readline/promises';
import { AgentloopError, type AgentloopClient } from '@agentloop/client';
import type { DecisionInput, PendingCall } from '@agentloop/protocol';
import { describeError } from './command.js';

/**
 * `run --follow` in a terminal: when the run pauses, ask for each pending call — approve (optionally with edited
 * arguments), deny with a reason, or the result of a client tool — and send the decisions.
 */
export async function promptDecisions(client: AgentloopClient, runId: string, pending: PendingCall[]): Promise<void> {
  if (!process.stdin.isTTY) {
    console.log(
      `run paused: decide with \`agentloop approve ${runId} <call>\`, \`agentloop deny ${runId} <call> --reason ...\` or, for a client tool, \`agentloop submit ${runId} <call> <result JSON>\``,
    );
    return;
  }
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
  try {
    for (const p of pending) {
      let decision = await askOne(rl, p);
      for (;;) {
        try {
          await client.runs.decide(runId, [decision]);
          break;
        } catch (err) {
          if (err instanceof AgentloopError && err.status === 409) break; // decided meanwhile (another terminal, an expiry)
          console.log(`  ${describeError(err)}`);
          decision = await askOne(rl, p);
        }
      }
    }
  } finally {
    rl.close();
  }
}

async function askOne(rl: readline.Interface, p: PendingCall): Promise<DecisionInput> {
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
    if (a === 'd' || a === 'deny')
      return { callId: p.callId, action: 'deny', reason: (await rl.question('  reason: ')).trim() || undefined };
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
