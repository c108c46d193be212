import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { wellFormedJson, type RunKeys } from '@agentloop/protocol';

/**
 * The paused batch's assistant message with `edits` ({callId: arguments text}) applied, and what it was built from:
 * its index and the SHA1 of its text, which the decisions script compares before it stores the edit. Built here,
 * where JSON keeps its arrays and key order (Lua's cjson turns `[]` into `{}`).
 */
export async function editedBatchMessage(
  redis: Redis,
  k: RunKeys,
  edits: Record<string, string>,
): Promise<{ text: string; index: number; sha1: string }> {
  const index = Number(await redis.hget(k.state, 'batchMsg'));
  const original = Number.isInteger(index) ? await redis.lindex(k.messages, index) : null;
  // no message to edit: an edit the script can never apply (it answers for the run first: not found, not paused…)
  if (original === null) return { text: '{}', index: -1, sha1: '' };
  const message = JSON.parse(original) as { toolCalls?: Array<{ id: string; arguments: string }> };
  for (const c of message.toolCalls ?? []) if (Object.hasOwn(edits, c.id)) c.arguments = edits[c.id]!; // (an id may be `constructor`)
  return { text: wellFormedJson(message), index, sha1: createHash('sha1').update(original).digest('hex') };
}
