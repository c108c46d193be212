import type { Message, ToolCall } from '@agentloop/protocol';
import { WireError } from './openai-wire.js';
import { strictSchemaError } from './structured-output-wire.js';
import type { ResponsesLedger } from './responses-ledger.js';
import type { MockOutput, MockRequest } from './types.js';

/** The mock's own reading of which models reason (o-series, gpt-5 family but gpt-5-chat): an independent copy. */
export const RESPONSES_REASONING_MODEL = /^(o1|o3|o4|gpt-5)(?!-chat)/;

/** OpenAI's own 400 texts on the Responses API, as the real API words them. */
export const RESPONSES_ERRORS = {
  noToolCall: (callId: string) => `No tool call found for function call output with call_id ${callId}.`,
  noToolOutput: (callId: string) => `No tool output found for function call ${callId}.`,
  missingReasoning: (fcId: string, rsId: string) =>
    `Item '${fcId}' of type 'function_call' was provided without its required 'reasoning' item: '${rsId}'.`,
  missingFollowing: (rsId: string) =>
    `Item '${rsId}' of type 'reasoning' was provided without its required following item.`,
  notPersisted: (id: string) =>
    `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
  unverified: (content: string) =>
    `The encrypted content ${content.slice(0, 4)}...${content.slice(-4)} could not be verified.`,
  encryptedUnsupported: 'Encrypted content is not supported with this model.',
  previousResponse: (id: string) => `Previous response with id '${id}' not found.`,
  unknownParameter: (name: string) => `Unknown parameter: '${name}'.`,
  unsupportedParameter: (name: string) => `Unsupported parameter: '${name}' is not supported with this model.`,
  contextLength: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
};

/** Chat Completions fields the Responses API does not take. */
const CHAT_ONLY = [
  'messages',
  'stop',
  'stream_options',
  'response_format',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'reasoning_effort',
];

type Item = Record<string, any>;

const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content
      .map((p: Item) => (typeof p?.text === 'string' ? p.text : typeof p?.refusal === 'string' ? p.refusal : ''))
      .join('');
  return '';
};

const input = (i: number, field?: string) => `input[${i}]${field ? `.${field}` : ''}`;

/**
 * Parse and validate a Responses request like the real API (stateless use): throws WireError with the API's own
 * text. Items become the canonical transcript (a turn's message and function calls one assistant message, as a
 * Chat request shows it), so scripts read Responses and Chat requests alike.
 */
export function parseResponsesRequest(
  body: Record<string, unknown>,
  ledger: ResponsesLedger,
): Pick<MockRequest, 'model' | 'stream' | 'messages' | 'tools' | 'output'> {
  if (typeof body.model !== 'string' || !body.model)
    throw new WireError(400, "Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  const model = body.model;
  const reasons = RESPONSES_REASONING_MODEL.test(model);
  for (const k of CHAT_ONLY)
    if (body[k] !== undefined) throw new WireError(400, RESPONSES_ERRORS.unknownParameter(k), k, 'unknown_parameter');
  if (body.previous_response_id !== undefined && body.previous_response_id !== null)
    throw new WireError(
      400,
      RESPONSES_ERRORS.previousResponse(String(body.previous_response_id)),
      'previous_response_id',
      'previous_response_not_found',
    );
  const include = Array.isArray(body.include) ? body.include : [];
  if (include.includes('reasoning.encrypted_content') && !reasons)
    throw new WireError(400, RESPONSES_ERRORS.encryptedUnsupported, 'include');
  const effort = (body.reasoning as { effort?: unknown } | undefined)?.effort;
  if (reasons && body.temperature !== undefined && effort !== 'none')
    throw new WireError(400, RESPONSES_ERRORS.unsupportedParameter('temperature'), 'temperature');
  const items: Item[] =
    typeof body.input === 'string'
      ? [{ type: 'message', role: 'user', content: body.input }]
      : Array.isArray(body.input)
        ? (body.input as Item[])
        : [];
  if (!items.length)
    throw new WireError(
      400,
      "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      'input',
      'empty_array',
    );
  const messages = toMessages(items, reasons, ledger, body.store === true);
  const tools = (Array.isArray(body.tools) ? (body.tools as Item[]) : []).map((t, i) => {
    if (t?.type !== 'function')
      throw new WireError(
        400,
        `Invalid value: '${String(t?.type)}'. Supported values are: 'function', 'file_search', 'web_search', 'computer_use_preview', 'mcp', and others.`,
        `tools[${i}].type`,
        'invalid_value',
      );
    if (typeof t.name !== 'string')
      throw new WireError(
        400,
        `Missing required parameter: 'tools[${i}].name'.`,
        `tools[${i}].name`,
        'missing_required_parameter',
      );
    return t.name;
  });
  const output = textFormat(body);
  return { model, stream: body.stream === true, messages, tools, ...(output ? { output } : {}) };
}

/** The items → canonical messages, with the pairing and reasoning rules checked on the way. */
function toMessages(items: Item[], reasons: boolean, ledger: ResponsesLedger, store: boolean): Message[] {
  const messages: Message[] = [];
  let turn: Message | null = null;
  let pendingReasoning = '';
  const called = new Set<string>();
  const answered = new Set<string>();
  const reasoningSeen = new Set<string>();
  const assistant = (): Message => {
    if (!turn) {
      turn = { role: 'assistant', content: null, ...(pendingReasoning ? { reasoning: pendingReasoning } : {}) };
      pendingReasoning = '';
      messages.push(turn);
    }
    return turn;
  };
  items.forEach((item, i) => {
    const type = item?.type ?? (item?.role !== undefined ? 'message' : undefined);
    if (type === 'message') {
      const role = item.role === 'developer' ? 'system' : item.role;
      if (role !== 'user' && role !== 'system' && role !== 'assistant')
        throw new WireError(
          400,
          `Invalid value: '${String(item.role)}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.`,
          input(i, 'role'),
          'invalid_value',
        );
      if (role === 'assistant') {
        const t: Message =
          turn !== null && (turn as Message).toolCalls?.length ? ((turn = null), assistant()) : assistant();
        t.content = (t.content ?? '') + textOf(item.content);
        return;
      }
      turn = null;
      messages.push({ role, content: textOf(item.content) });
    } else if (type === 'function_call') {
      if (typeof item.call_id !== 'string')
        throw new WireError(
          400,
          `Missing required parameter: '${input(i, 'call_id')}'.`,
          input(i, 'call_id'),
          'missing_required_parameter',
        );
      const dep = reasons
        ? ledger.reasoningOf(typeof item.id === 'string' ? item.id : undefined, item.call_id)
        : undefined;
      if (dep && !reasoningSeen.has(dep.reasoningId))
        throw new WireError(400, RESPONSES_ERRORS.missingReasoning(dep.itemId, dep.reasoningId), 'input');
      called.add(item.call_id);
      const call: ToolCall = {
        id: item.call_id,
        name: String(item.name ?? ''),
        arguments: String(item.arguments ?? ''),
      };
      const t = assistant();
      t.toolCalls = [...(t.toolCalls ?? []), call];
    } else if (type === 'function_call_output') {
      const callId = String(item.call_id ?? '');
      if (!called.has(callId)) throw new WireError(400, RESPONSES_ERRORS.noToolCall(callId), 'input');
      answered.add(callId);
      turn = null;
      messages.push({ role: 'tool', toolCallId: callId, content: textOf(item.output) });
    } else if (type === 'reasoning') {
      checkReasoning(item, items[i + 1], reasons, ledger);
      reasoningSeen.add(String(item.id));
      const summary = (Array.isArray(item.summary) ? item.summary : [])
        .map((s: Item) => String(s?.text ?? ''))
        .join('\n\n');
      if (turn) (turn as Message).reasoning = [(turn as Message).reasoning, summary].filter(Boolean).join('\n\n');
      else pendingReasoning = [pendingReasoning, summary].filter(Boolean).join('\n\n');
    } else if (type === 'item_reference') {
      if (!store) throw new WireError(404, RESPONSES_ERRORS.notPersisted(String(item.id)), 'input');
    } else
      throw new WireError(
        400,
        `Invalid value: '${String(type)}'. Supported values are: 'message', 'function_call', 'function_call_output', 'reasoning', 'item_reference', and others.`,
        input(i, 'type'),
        'invalid_value',
      );
  });
  const unanswered = [...called].find((id) => !answered.has(id));
  if (unanswered !== undefined) throw new WireError(400, RESPONSES_ERRORS.noToolOutput(unanswered), 'input');
  return messages;
}

/** A reasoning item sent back: issued here, its encrypted content unchanged, followed by the item it led to. */
function checkReasoning(item: Item, next: Item | undefined, reasons: boolean, ledger: ResponsesLedger): void {
  const id = String(item.id ?? '');
  const issued = ledger.issued(id);
  const content = typeof item.encrypted_content === 'string' ? item.encrypted_content : null;
  if (content === null) throw new WireError(404, RESPONSES_ERRORS.notPersisted(id), 'input');
  if (!issued || issued.encrypted !== content)
    throw new WireError(400, RESPONSES_ERRORS.unverified(content), null, 'invalid_encrypted_content');
  if (reasons && issued.following !== null && next?.id !== issued.following)
    throw new WireError(400, RESPONSES_ERRORS.missingFollowing(id), 'input');
}

/** `text.format` (structured output), checked like the API checks it. */
function textFormat(body: Record<string, unknown>): MockOutput | undefined {
  const format = (body.text as { format?: Item } | undefined)?.format;
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type !== 'json_schema')
    throw new WireError(
      400,
      `Invalid value: '${String(format.type)}'. Supported values are: 'text', 'json_object', and 'json_schema'.`,
      'text.format.type',
      'invalid_value',
    );
  if (typeof format.name !== 'string')
    throw new WireError(
      400,
      "Missing required parameter: 'text.format.name'.",
      'text.format.name',
      'missing_required_parameter',
    );
  const strict = format.strict === true;
  if (strict) {
    const error = strictSchemaError(format.name, format.schema);
    if (error) throw new WireError(400, error, 'text.format.schema', 'invalid_json_schema');
  }
  return { type: 'json_schema', name: format.name, schema: format.schema, strict };
}
