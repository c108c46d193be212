import { expect } from 'vitest';
import { checkEvents, checkTranscript, type MockRequest, type ReplySpec, type Script } from '@agentloop/testing';
import type { ApiClient } from './api-client.js';

/** Poll until fn() is true. */
export async function until(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!(await fn())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One mock script for many scenarios: the run's input names its scenario as `[name]`. */
export function byScenario(scenarios: Record<string, (req: MockRequest) => ReplySpec>, fallback: string): Script {
  return (req) => {
    const name = /\[(\w+)\]/.exec(req.messages.find((m) => m.role === 'user' && /\[\w+\]/.test(m.content ?? ''))?.content ?? '')?.[1] ?? fallback;
    return scenarios[name]!(req);
  };
}

/** Waits for the run to end, then checks the SPEC invariants of its transcript and event stream. */
export async function finishedRun(client: ApiClient, id: string, timeoutMs = 30_000) {
  const snap = await client.waitTerminal(id, timeoutMs);
  const messages = (await client.getRun(id, 'messages')).json.messages!;
  const events = (await client.events(id)).events;
  expect(checkTranscript(messages)).toEqual([]);
  expect(checkEvents(events)).toEqual([]);
  return { snap, messages, events };
}
