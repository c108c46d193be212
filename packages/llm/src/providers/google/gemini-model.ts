import type { FunctionCall, GoogleGenAI } from '@google/genai';
import { z } from 'zod';

type GenAiModule = typeof import('@google/genai');
let genAiModule: Promise<GenAiModule> | null = null;
/**
 * The SDK, loaded by the first Gemini call: a deployment that never calls Gemini does not carry it (~4.4 MB of heap,
 * which every full collection of the heap walks).
 */
const loadGenAi = (): Promise<GenAiModule> => (genAiModule ??= import('@google/genai'));
import { newCallId, type ToolCall } from '@agentloop/protocol';
import { LlmError, type LlmUsage, type ModelCallRequest, type ModelClient, type ModelResponse } from '../../types.js';
import { GOOGLE, toGeminiContents } from './convert-contents.js';
import { GeminiFunctionCallAssembler } from './function-call-assembler.js';
import { modelProfile } from '../../model-profiles.js';
import { geminiOutput } from './gemini-output.js';
import { Count, ModelName, Str, opt, tokenCount } from '../wire.js';
import { generationParams, stringsOf } from './gemini-params.js';

// The wire boundary (see ../wire.ts): every chunk is checked for the fields read from it (the SDK copies them
// unchecked). A field of an unexpected type reads as absent; a candidate or part that is not an object is skipped.
const Chunk = z.object({
  usageMetadata: z.unknown().optional(),
  modelVersion: ModelName,
  candidates: opt(z.array(z.unknown())),
});
const Usage = z.object({
  promptTokenCount: Count,
  candidatesTokenCount: Count,
  thoughtsTokenCount: Count,
  cachedContentTokenCount: Count,
});
const Candidate = z.object({
  finishReason: z.unknown().optional(),
  finishMessage: opt(Str),
  content: opt(z.object({ parts: opt(z.array(z.unknown())) })),
});
const Part = z.object({
  text: opt(Str),
  thought: opt(z.boolean()),
  thoughtSignature: z.unknown().optional(),
  functionCall: z.unknown().optional(),
});

export interface GeminiModelOptions {
  apiKey: string;
  /** GEMINI_BASE_URL, without /v1beta. */
  baseUrl?: string;
  /** Longest a call may take, streaming included [600000, as for OpenAI]. */
  timeoutMs?: number;
}

function mapFinish(reason: string | undefined, hasCalls: boolean): ModelResponse['finishReason'] {
  if (hasCalls) return 'tool_calls';
  switch (reason) {
    case 'STOP':
      return 'stop';
    case 'MAX_TOKENS':
      return 'length';
    case 'SAFETY':
    case 'PROHIBITED_CONTENT':
    case 'BLOCKLIST':
    case 'SPII':
      return 'content_filter';
    default:
      return reason ? 'other' : 'stop';
  }
}

/** google.rpc.RetryInfo's `retryDelay` ("34.4s") in the error body the SDK puts in its message, in ms. */
export function retryInfoMs(message: string): number | undefined {
  const m = /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(message);
  return m ? Math.ceil(Number(m[1]) * 1000) : undefined;
}

function mapError(
  err: unknown,
  outputStarted: boolean,
  callerAborted: boolean,
  ApiError: GenAiModule['ApiError'] | undefined,
): LlmError {
  if (err instanceof LlmError) return err;
  if (err instanceof Error && err.name === 'AbortError')
    // the SDK aborts on its own timeout too: only the caller's abort is an abort
    return callerAborted
      ? new LlmError('aborted', 'request aborted', { outputStarted, cause: err })
      : new LlmError('timeout', 'the Gemini call timed out', { outputStarted, cause: err });
  if (ApiError && err instanceof ApiError) {
    const opts = { status: err.status, outputStarted, cause: err };
    if (err.status === 429)
      return new LlmError('rate_limit', err.message, { ...opts, retryAfterMs: retryInfoMs(err.message) });
    if (err.status >= 500) return new LlmError('server', err.message, opts);
    if (err.status === 401 || err.status === 403) return new LlmError('auth', err.message, opts);
    if (/exceeds the maximum number of tokens|context/i.test(err.message))
      return new LlmError('context_length', err.message, opts);
    return new LlmError('invalid_request', err.message, opts);
  }
  return new LlmError('network', `stream failed: ${err instanceof Error ? err.message : String(err)}`, {
    outputStarted,
    cause: err,
  });
}

interface Malformed {
  malformed: string;
  text: string;
  reasoning: string;
  usage: LlmUsage;
  model: string;
  outputStarted: boolean;
}

/**
 * A response standing for a call Gemini failed to form: one canonical call marked `malformed` (named after the
 * function when the finish message shows it), which the loop answers with an `invalid_arguments` error.
 */
function malformedCallResponse(m: Malformed, tools: ModelCallRequest['tools']): ModelResponse {
  const shown = m.malformed.replace(/^[^:]*:\s*/, '');
  const name =
    /default_api\.([A-Za-z_][\w-]*)/.exec(shown)?.[1] ??
    /^(?:print\()?\s*([A-Za-z_][\w-]*)\s*\(/.exec(shown)?.[1] ??
    (tools?.length === 1 ? tools[0]!.name : 'malformed_function_call');
  const call: ToolCall = {
    id: newCallId(),
    name,
    arguments: '{}',
    providerData: { provider: GOOGLE, malformed: m.malformed },
  };
  const message: ModelResponse['message'] = { role: 'assistant', content: m.text || null, toolCalls: [call] };
  if (m.reasoning) message.reasoning = m.reasoning;
  return { message, finishReason: 'tool_calls', usage: m.usage, provider: GOOGLE, model: m.model };
}

/**
 * Gemini through `@google/genai`, streaming: functionCall parts become canonical calls (generated ids where Gemini
 * gives none) with their thoughtSignature kept in providerData and sent back on the same part; thought parts are
 * reasoning; usageMetadata is usage.
 */
export class GeminiModel implements ModelClient {
  readonly provider = GOOGLE;
  private ai: Promise<GoogleGenAI> | null = null;

  constructor(private readonly opts: GeminiModelOptions) {}

  private client(): Promise<GoogleGenAI> {
    const o = this.opts;
    this.ai ??= loadGenAi().then(
      ({ GoogleGenAI }) =>
        new GoogleGenAI({
          apiKey: o.apiKey,
          httpOptions: {
            apiVersion: 'v1beta',
            timeout: o.timeoutMs ?? 600_000,
            ...(o.baseUrl ? { baseUrl: o.baseUrl } : {}),
          },
        }),
    );
    return this.ai;
  }

  async call(req: ModelCallRequest): Promise<ModelResponse> {
    const first = await this.once(req);
    if (!('malformed' in first)) return first;
    // Gemini could not produce a well-formed call: ask once more, then let the model see its own mistake as a tool
    // error it can recover from (a call it did not manage to make cannot be run)
    const second = first.outputStarted ? first : await this.once(req);
    const res = 'malformed' in second ? malformedCallResponse(second, req.tools) : second;
    if (second !== first)
      for (const k of ['promptTokens', 'completionTokens', 'reasoningTokens', 'cachedTokens'] as const)
        res.usage[k] += first.usage[k]; // both attempts are billed
    return res;
  }

  private async once(req: ModelCallRequest): Promise<ModelResponse | Malformed> {
    const output = geminiOutput(req);
    const { contents, systemInstruction } = toGeminiContents(output.messages, {
      requireSignatures: modelProfile('google', req.model.name).profile.gemini3 === true,
    });
    let text = '';
    let reasoning = '';
    let finish: string | undefined;
    let finishMessage = '';
    let usage: z.infer<typeof Usage> | undefined;
    let modelName = req.model.name;
    let outputStarted = false;
    const calls = new GeminiFunctionCallAssembler();
    try {
      const stream = await (
        await this.client()
      ).models.generateContentStream({
        model: req.model.name,
        contents,
        config: {
          ...generationParams(req.model.params ?? {}),
          ...output.config,
          ...(systemInstruction ? { systemInstruction } : {}),
          ...(req.stop?.length
            ? { stopSequences: [...new Set([...req.stop, ...stringsOf(req.model.params?.stopSequences)])].slice(0, 5) }
            : {}),
          ...(req.tools?.length
            ? {
                tools: [
                  {
                    functionDeclarations: req.tools.map((t) => ({
                      name: t.name,
                      description: t.description,
                      parametersJsonSchema: t.parameters,
                    })),
                  },
                ],
              }
            : {}),
          abortSignal: req.signal,
        },
      });
      for await (const raw of stream) {
        const chunk = Chunk.safeParse(raw);
        if (!chunk.success) continue;
        const c = chunk.data;
        if (c.usageMetadata !== undefined) {
          const u = Usage.safeParse(c.usageMetadata);
          if (u.success) usage = u.data;
        }
        if (c.modelVersion) modelName = c.modelVersion;
        const cand = Candidate.safeParse(c.candidates?.[0]);
        if (!cand.success) continue;
        // a finishReason of an unexpected type still ends the response (read as OTHER)
        const fr = cand.data.finishReason;
        if (fr) finish = typeof fr === 'string' ? fr : 'OTHER';
        if (cand.data.finishMessage) finishMessage = cand.data.finishMessage;
        for (const rawPart of cand.data.content?.parts ?? []) {
          const p = Part.safeParse(rawPart);
          if (!p.success) continue;
          const part = p.data;
          if (part.functionCall !== null && typeof part.functionCall === 'object')
            calls.add(part.functionCall as FunctionCall, part.thoughtSignature);
          else if (part.text) {
            outputStarted = true;
            if (part.thought) {
              reasoning += part.text;
              req.onReasoningDelta?.(part.text);
            } else {
              text += part.text;
              req.onTextDelta?.(part.text);
            }
          }
        }
      }
    } catch (err) {
      throw mapError(err, outputStarted, !!req.signal?.aborted, (await genAiModule?.catch(() => undefined))?.ApiError);
    }
    const u: LlmUsage = {
      promptTokens: usage?.promptTokenCount ?? 0,
      completionTokens: tokenCount((usage?.candidatesTokenCount ?? 0) + (usage?.thoughtsTokenCount ?? 0)),
      reasoningTokens: usage?.thoughtsTokenCount ?? 0,
      cachedTokens: usage?.cachedContentTokenCount ?? 0,
    };
    if (finish === 'MALFORMED_FUNCTION_CALL' || finish === 'UNEXPECTED_TOOL_CALL')
      // the SDK keeps finishMessage (the call's text) only on Vertex; the Gemini API's is dropped
      return {
        malformed: finishMessage || `Gemini answered ${finish}: the function call it generated was not valid`,
        text,
        reasoning,
        usage: u,
        model: modelName,
        outputStarted,
      };
    if (finish === 'SAFETY' || finish === 'PROHIBITED_CONTENT' || finish === 'BLOCKLIST' || finish === 'SPII')
      throw new LlmError('content_filter', `Gemini stopped the response: finishReason ${finish}`, { outputStarted });
    const valid = calls.finish();
    const message: ModelResponse['message'] = { role: 'assistant', content: text === '' && valid.length ? null : text };
    if (valid.length) message.toolCalls = valid;
    if (reasoning) message.reasoning = reasoning;
    return { message, finishReason: mapFinish(finish, valid.length > 0), usage: u, provider: GOOGLE, model: modelName };
  }
}
