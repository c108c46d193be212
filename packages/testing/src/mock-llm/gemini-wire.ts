import { randomBytes } from 'node:crypto';
import type { Message } from '@agentloop/protocol';
import { WireError } from './openai-wire.js';
import type { MockRequest, ReplySpec } from './types.js';

type Part = { text?: string; thought?: boolean; thoughtSignature?: string; functionCall?: { id?: string; name?: string; args?: unknown }; functionResponse?: { id?: string; name?: string; response?: unknown } };
type Content = { role?: string; parts?: Part[] };

/** A Gemini generateContent body in canonical form (for scripts and journals). */
export function parseGeminiRequest(body: Record<string, any>, model: string): Pick<MockRequest, 'model' | 'stream' | 'messages' | 'tools'> {
  if (!Array.isArray(body.contents) || !body.contents.length) throw new WireError(400, '* GenerateContentRequest.contents: contents is not specified', null, null, 'INVALID_ARGUMENT');
  const messages: Message[] = [];
  const sys = (body.systemInstruction as Content | undefined)?.parts?.map((p) => p.text ?? '').join('') ?? (typeof body.systemInstruction === 'string' ? body.systemInstruction : '');
  if (sys) messages.push({ role: 'system', content: sys });
  let n = 0;
  for (const c of body.contents as Content[]) {
    const parts = c.parts ?? [];
    if (c.role === 'model') {
      const text = parts.filter((p) => typeof p.text === 'string' && !p.thought).map((p) => p.text).join('');
      const calls = parts.filter((p) => p.functionCall).map((p) => ({ id: p.functionCall!.id ?? `gem_${n++}`, name: p.functionCall!.name ?? '', arguments: JSON.stringify(p.functionCall!.args ?? {}) }));
      messages.push({ role: 'assistant', content: text || null, ...(calls.length ? { toolCalls: calls } : {}) });
    } else {
      const responses = parts.filter((p) => p.functionResponse);
      if (responses.length) for (const p of responses) messages.push({ role: 'tool', toolCallId: p.functionResponse!.id ?? '', content: JSON.stringify(p.functionResponse!.response ?? {}) });
      else messages.push({ role: 'user', content: parts.map((p) => p.text ?? '').join('') });
    }
  }
  const tools = ((body.tools ?? []) as Array<{ functionDeclarations?: Array<{ name?: string }> }>).flatMap((t) => (t.functionDeclarations ?? []).map((f) => String(f.name ?? '')));
  return { model, stream: true, messages, tools };
}

/** SSE frames of a scripted reply in Gemini's format (the first call of a step carries a thoughtSignature). */
export function geminiFrames(spec: ReplySpec, model: string, promptTokens: number): string {
  const frame = (parts: Part[], finish?: string) =>
    `data: ${JSON.stringify({
      candidates: [{ content: { role: 'model', parts }, index: 0, ...(finish ? { finishReason: finish } : {}) }],
      usageMetadata: { promptTokenCount: promptTokens, candidatesTokenCount: Math.ceil((spec.text?.length ?? 0) / 4) + 1, totalTokenCount: promptTokens + 1 },
      modelVersion: model,
      responseId: randomBytes(8).toString('base64url'),
    })}\r\n\r\n`;
  const frames: string[] = [];
  if (spec.reasoning) frames.push(frame([{ text: spec.reasoning, thought: true }]));
  const pieces = spec.chunking === 'fine' ? (spec.text?.match(/[\s\S]{1,6}/g) ?? []) : spec.text ? [spec.text] : [];
  for (const p of pieces) frames.push(frame([{ text: p }]));
  const calls = (spec.toolCalls ?? []).map((c, i): Part => ({
    functionCall: { ...(c.id ? { id: c.id } : {}), name: c.name, args: c.arguments ? JSON.parse(c.arguments) : (c.args ?? {}) },
    ...(i === 0 ? { thoughtSignature: randomBytes(24).toString('base64') } : {}),
  }));
  frames.push(frame(calls.length ? calls : [{ text: '' }], 'STOP'));
  return frames.join('');
}
