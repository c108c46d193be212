import { SAFE_CALL_ID_RE, newCallId, type Message } from '@agentloop/protocol';

/**
 * Stored call ids are unique within the run and safe in job ids, hash fields and keys (SPEC §3). A provider's id
 * that is not — any characters, empty, too long, repeated in the batch, or already used by the run (`taken`) — is
 * replaced by a generated one; the provider's own id is kept in the call's providerData (`providerCallId`, with
 * the `provider` that made it) for the round trip to that provider.
 */
export function normalizeCallIds(message: Message, provider: string, taken: ReadonlySet<string> = new Set()): Message {
  if (!message.toolCalls?.length) return message;
  const seen = new Set<string>();
  let renamed = false;
  const toolCalls = message.toolCalls.map((c) => {
    const id = typeof c.id === 'string' ? c.id : '';
    if (SAFE_CALL_ID_RE.test(id) && !seen.has(id) && !taken.has(id)) {
      seen.add(id);
      return c;
    }
    const fresh = newCallId();
    seen.add(fresh);
    renamed = true;
    return { ...c, id: fresh, providerData: { provider, ...c.providerData, providerCallId: id } };
  });
  return renamed ? { ...message, toolCalls } : message;
}
