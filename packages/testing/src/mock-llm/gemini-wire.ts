import { randomBytes } from 'node:crypto';
import type { Message } from '@agentloop/protocol';
import { WireError } from './openai-wire.js';
import type { MockRequest, ReplySpec } from './types.js';
import { geminiResponseFormat } from './structured-output-wire.js';

type Part = {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { id?: string; name?: string; args?: unknown };
  functionResponse?: { id?: string; name?: string; response?: unknown };
};
type Content = { role?: string; parts?: Part[] };

export const GEMINI_MISSING_SIGNATURE = (name: string, position: number) =>
  `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${name}\` , position ${position}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;

/**
 * Gemini 3's rule: in the current turn (after the last user text), the first functionCall part of every model step
 * must carry back its thoughtSignature — else the real API answers 400 with this text.
 */
export function checkThoughtSignatures(body: Record<string, any>, model: string): void {
  if (!/^gemini-3/.test(model)) return;
  const contents = body.contents as Content[];
  let start = 0;
  contents.forEach((c, i) => {
    if (c.role !== 'model' && (c.parts ?? []).some((p) => typeof p.text === 'string')) start = i;
  });
  contents.slice(start).forEach((c, i) => {
    if (c.role !== 'model') return;
    const first = (c.parts ?? []).find((p) => p.functionCall);
    if (first && !first.thoughtSignature)
      throw new WireError(
        400,
        GEMINI_MISSING_SIGNATURE(first.functionCall!.name ?? '', start + i + 1),
        null,
        null,
        'INVALID_ARGUMENT',
      );
  });
}

/** A Gemini generateContent body in canonical form (for scripts and journals). */
export function parseGeminiRequest(
  body: Record<string, any>,
  model: string,
): Pick<MockRequest, 'model' | 'messages' | 'tools' | 'output'> {
  if (!Array.isArray(body.contents) || !body.contents.length)
    throw new WireError(
      400,
      '* GenerateContentRequest.contents: contents is not specified',
      null,
      null,
      'INVALID_ARGUMENT',
    );
  const messages: Message[] = [];
  const sys =
    (body.systemInstruction as Content | undefined)?.parts?.map((p) => p.text ?? '').join('') ??
    (typeof body.systemInstruction === 'string' ? body.systemInstruction : '');
  if (sys) messages.push({ role: 'system', content: sys });
  let n = 0;
  const unanswered: Array<{ id: string; name: string }> = [];
  for (const c of body.contents as Content[]) {
    const parts = c.parts ?? [];
    if (c.role === 'model') {
      const text = parts
        .filter((p) => typeof p.text === 'string' && !p.thought)
        .map((p) => p.text)
        .join('');
      const calls = parts
        .filter((p) => p.functionCall)
        .map((p) => ({
          id: p.functionCall!.id ?? `gem_${n++}`,
          name: p.functionCall!.name ?? '',
          arguments: JSON.stringify(p.functionCall!.args ?? {}),
        }));
      unanswered.push(...calls);
      messages.push({ role: 'assistant', content: text || null, ...(calls.length ? { toolCalls: calls } : {}) });
    } else {
      const responses = parts.filter((p) => p.functionResponse);
      // a response without an id answers the earliest open call of its name (the API pairs them by name)
      const pair = (fr: NonNullable<Part['functionResponse']>) => {
        const i = unanswered.findIndex((c) => (fr.id ? c.id === fr.id : c.name === fr.name));
        return i >= 0 ? unanswered.splice(i, 1)[0]!.id : (fr.id ?? '');
      };
      if (responses.length)
        for (const p of responses)
          messages.push({
            role: 'tool',
            toolCallId: pair(p.functionResponse!),
            content: JSON.stringify(p.functionResponse!.response ?? {}),
          });
      else messages.push({ role: 'user', content: parts.map((p) => p.text ?? '').join('') });
    }
  }
  checkThoughtSignatures(body, model);
  const tools = ((body.tools ?? []) as Array<{ functionDeclarations?: Array<{ name?: string }> }>).flatMap((t) =>
    (t.functionDeclarations ?? []).map((f) => String(f.name ?? '')),
  );
  const output = geminiResponseFormat(body, model);
  return { model, messages, tools, ...(output ? { output } : {}) };
}

function responseOf(spec: ReplySpec, model: string, promptTokens: number, parts: Part[], finish?: string): object {
  const completion = Math.ceil((spec.text?.length ?? 0) / 4) + 1;
  return {
    // a MALFORMED_FUNCTION_CALL candidate has no content, as the real API sends it
    candidates: [
      {
        ...(finish === 'MALFORMED_FUNCTION_CALL' ? {} : { content: { role: 'model', parts } }),
        index: 0,
        ...(finish ? { finishReason: finish } : {}),
        ...(finish && spec.finishMessage ? { finishMessage: spec.finishMessage } : {}),
      },
    ],
    usageMetadata: {
      promptTokenCount: promptTokens,
      candidatesTokenCount: completion,
      totalTokenCount: promptTokens + completion,
    },
    modelVersion: model,
    responseId: randomBytes(8).toString('base64url'),
  };
}

function callParts(spec: ReplySpec): Part[] {
  return (spec.toolCalls ?? []).map((c, i): Part => ({
    functionCall: {
      ...(c.id ? { id: c.id } : {}),
      name: c.name,
      args: c.arguments ? JSON.parse(c.arguments) : (c.args ?? {}),
    },
    ...(i === 0 ? { thoughtSignature: randomBytes(24).toString('base64') } : {}),
  }));
}

/** SSE frames of a scripted reply in Gemini's format (the first call of a step carries a thoughtSignature). */
export function geminiFrames(spec: ReplySpec, model: string, promptTokens: number): string {
  return geminiFrameList(spec, model, promptTokens).join('');
}

/** The same frames one by one (for slow streams). */
export function geminiFrameList(spec: ReplySpec, model: string, promptTokens: number): string[] {
  const frame = (parts: Part[], finish?: string) =>
    `data: ${JSON.stringify(responseOf(spec, model, promptTokens, parts, finish))}\r\n\r\n`;
  const frames: string[] = [];
  if (spec.reasoning) frames.push(frame([{ text: spec.reasoning, thought: true }]));
  const pieces = spec.chunking === 'fine' ? (spec.text?.match(/[\s\S]{1,6}/g) ?? []) : spec.text ? [spec.text] : [];
  for (const p of pieces) frames.push(frame([{ text: p }]));
  const calls = callParts(spec);
  frames.push(frame(calls.length ? calls : [{ text: '' }], spec.finishReason ?? 'STOP'));
  return frames;
}

/** The same reply as one `:generateContent` JSON response. */
export function geminiResponse(spec: ReplySpec, model: string, promptTokens: number): object {
  const parts: Part[] = [
    ...(spec.reasoning ? [{ text: spec.reasoning, thought: true }] : []),
    ...(spec.text ? [{ text: spec.text }] : []),
    ...callParts(spec),
  ];
  return responseOf(spec, model, promptTokens, parts.length ? parts : [{ text: '' }], spec.finishReason ?? 'STOP');
}
