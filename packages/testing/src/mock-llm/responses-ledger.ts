import { randomBytes } from 'node:crypto';

/** What the mock issued for one reasoning item: the opaque content and the item that followed it. */
interface IssuedReasoning {
  encrypted: string;
  /** The id of the output item right after it (a message or a function call). */
  following: string | null;
}

/**
 * Everything the mock's Responses API handed out, so that what comes back can be checked as the real API checks it
 * (statelessly: with `store: false`, a reasoning item must come back whole, with its encrypted content byte for
 * byte, in front of the items it led to).
 */
export class ResponsesLedger {
  private readonly reasoning = new Map<string, IssuedReasoning>();
  /** function_call item id and call_id → the reasoning item that preceded the call. */
  private readonly callReasoning = new Map<string, { itemId: string; reasoningId: string }>();

  /** A fresh reasoning item id with its opaque content (Fernet-looking, like OpenAI's). */
  issueReasoning(): { id: string; encrypted: string } {
    const id = `rs_${randomBytes(24).toString('hex')}`;
    const encrypted = `gAAAAA${randomBytes(96 + Math.floor(Math.random() * 64)).toString('base64url')}==`;
    this.reasoning.set(id, { encrypted, following: null });
    return { id, encrypted };
  }

  /** The item that followed the reasoning item in the output. */
  followed(reasoningId: string, itemId: string): void {
    const r = this.reasoning.get(reasoningId);
    if (r && r.following === null) r.following = itemId;
  }

  /** A function call issued after a reasoning item: it cannot come back without it. */
  callAfter(reasoningId: string, itemId: string, callId: string): void {
    this.callReasoning.set(itemId, { itemId, reasoningId });
    this.callReasoning.set(callId, { itemId, reasoningId });
  }

  issued(reasoningId: string): IssuedReasoning | undefined {
    return this.reasoning.get(reasoningId);
  }

  /** The reasoning item a function call (by item id, else by call_id) depends on, with the call's item id. */
  reasoningOf(itemId: string | undefined, callId: string): { itemId: string; reasoningId: string } | undefined {
    return (itemId ? this.callReasoning.get(itemId) : undefined) ?? this.callReasoning.get(callId);
  }

  /** How many reasoning items were issued (tests). */
  get size(): number {
    return this.reasoning.size;
  }

  /** The issued encrypted content of an item (tests compare what came back against it). */
  encryptedOf(reasoningId: string): string | undefined {
    return this.reasoning.get(reasoningId)?.encrypted;
  }
}
