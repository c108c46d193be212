import { MAX_ARGUMENTS_CHARS, SAFE_CALL_ID_RE, newCallId, type Message, type ToolCall } from '@agentloop/protocol';

/**
 * Stored call ids are unique within the run and safe in job ids, hash fields and keys (SPEC §3). A provider's id
 * that is not — any characters, empty, too long, repeated in the batch, or already used by the run (`taken`) — is
 * replaced by a generated one; the provider's own id is kept in the call's providerData (`providerCallId`, with
 * the `provider` that made it) for the round trip to that provider. Arguments over the size bound are replaced by a
 * stand-in (boundedArguments).
 */
export function normalizeCallIds(message: Message, provider: string, taken: ReadonlySet<string> = new Set()): Message {
  if (!message.toolCalls?.length) return message;
  const seen = new Set<string>();
  let renamed = false;
  const toolCalls = message.toolCalls.map((original) => {
    const c = boundedArguments(original);
    if (c !== original) renamed = true;
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

/**
 * Arguments over the size bound are answered invalid_arguments; the transcript keeps a short stand-in instead of
 * them, so they are not stored, nor sent back to the provider on every later call.
 */
function boundedArguments(c: ToolCall): ToolCall {
  if (c.arguments.length <= MAX_ARGUMENTS_CHARS) return c;
  const why = `arguments of ${c.arguments.length} characters, over the ${MAX_ARGUMENTS_CHARS} allowed`;
  // marked malformed: the loop answers it invalid_arguments without looking at the stand-in
  return { ...c, arguments: '{}', providerData: { ...c.providerData, malformed: why } };
}
