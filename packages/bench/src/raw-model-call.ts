import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { nodeFetch } from '@agentloop/llm';

/**
 * The model call of the raw loop: one streamed request through the provider's official SDK, read to the end, on the
 * same transport the product's adapter uses (the openai SDK on node:http, @google/genai on global fetch). The
 * conversation stays in the API's own wire format in memory (the floor: no conversion, no persistence).
 */
export type RawApi = 'chat' | 'responses' | 'gemini';

export interface RawCall {
  id: string;
  name: string;
  arguments: string;
}

export interface RawModel {
  /** The wire-format conversation of a new run. */
  start(prior: ReadonlyArray<{ role: string; content: string }>): unknown[];
  /** One streamed call; appends the model's turn to `conv` and returns its tool calls. */
  call(conv: unknown[]): Promise<RawCall[]>;
  /** Appends the tool results (in call order) to `conv`. */
  answer(conv: unknown[], calls: RawCall[], results: unknown[]): void;
}

export interface RawTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export async function rawModel(api: RawApi, mockUrl: string, model: string, tools: RawTool[]): Promise<RawModel> {
  if (api === 'gemini') return geminiModel(mockUrl, model, tools);
  const client = new OpenAI({ apiKey: 'sk-bench', baseURL: `${mockUrl}/v1`, maxRetries: 0, fetch: nodeFetch });
  return api === 'chat' ? chatModel(client, model, tools) : responsesModel(client, model, tools);
}

function chatModel(client: OpenAI, model: string, tools: RawTool[]): RawModel {
  const wireTools = tools.map((t) => ({ type: 'function' as const, function: t }));
  return {
    start: (prior) => prior.map((m) => ({ ...m })),
    async call(conv) {
      const stream = await client.chat.completions.create({
        model,
        messages: conv as OpenAI.Chat.Completions.ChatCompletionMessageParam[],
        tools: wireTools,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      const calls: RawCall[] = [];
      for await (const chunk of stream) {
        const delta = chunk.choices?.[0]?.delta;
        if (!delta) continue;
        if (delta.content) text += delta.content;
        for (const tc of delta.tool_calls ?? []) {
          const c = (calls[tc.index] ??= { id: '', name: '', arguments: '' });
          if (tc.id) c.id = tc.id;
          if (tc.function?.name) c.name += tc.function.name;
          if (tc.function?.arguments) c.arguments += tc.function.arguments;
        }
      }
      conv.push({
        role: 'assistant',
        content: calls.length && !text ? null : text,
        ...(calls.length
          ? {
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: 'function',
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      });
      return calls;
    },
    answer(conv, calls, results) {
      calls.forEach((c, i) => conv.push({ role: 'tool', tool_call_id: c.id, content: JSON.stringify(results[i]) }));
    },
  };
}

/** Stateless like the product's adapter: `store: false`, the turns sent back as plain items (no item ids). */
function responsesModel(client: OpenAI, model: string, tools: RawTool[]): RawModel {
  const wireTools = tools.map((t) => ({
    type: 'function' as const,
    name: t.name,
    description: t.description,
    parameters: t.parameters,
    strict: false,
  }));
  return {
    start: (prior) => prior.map((m) => ({ type: 'message', role: m.role, content: m.content })),
    async call(conv) {
      const stream = await client.responses.create({
        model,
        input: conv as OpenAI.Responses.ResponseInput,
        tools: wireTools,
        stream: true,
        store: false,
      });
      let text = '';
      const calls: RawCall[] = [];
      for await (const ev of stream) {
        if (ev.type === 'response.output_text.delta') text += ev.delta;
        else if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call')
          calls.push({ id: ev.item.call_id, name: ev.item.name, arguments: ev.item.arguments });
      }
      if (text) conv.push({ type: 'message', role: 'assistant', content: text });
      for (const c of calls) conv.push({ type: 'function_call', call_id: c.id, name: c.name, arguments: c.arguments });
      return calls;
    },
    answer(conv, calls, results) {
      calls.forEach((c, i) =>
        conv.push({ type: 'function_call_output', call_id: c.id, output: JSON.stringify(results[i]) }),
      );
    },
  };
}

interface GenAiModule {
  GoogleGenAI: new (o: { apiKey: string; httpOptions: Record<string, unknown> }) => {
    models: { generateContentStream(p: Record<string, unknown>): Promise<AsyncIterable<GeminiChunk>> };
  };
}
interface GeminiPart {
  text?: string;
  functionCall?: { id?: string; name?: string; args?: unknown };
}
interface GeminiChunk {
  candidates?: Array<{ content?: { parts?: GeminiPart[] } }>;
}

/**
 * @google/genai is a dependency of @agentloop/llm, not of this package: it is loaded from there (the same copy the
 * product's adapter runs).
 */
async function loadGenAi(): Promise<GenAiModule> {
  const fromLlm = createRequire(createRequire(import.meta.url).resolve('@agentloop/llm'));
  const cjs = fromLlm.resolve('@google/genai');
  return (await import(pathToFileURL(cjs.replace(/\.cjs$/, '.mjs')).href)) as GenAiModule;
}

async function geminiModel(mockUrl: string, model: string, tools: RawTool[]): Promise<RawModel> {
  const { GoogleGenAI } = await loadGenAi();
  const ai = new GoogleGenAI({ apiKey: 'bench', httpOptions: { apiVersion: 'v1beta', baseUrl: mockUrl } });
  const config = {
    tools: [
      {
        functionDeclarations: tools.map((t) => ({
          name: t.name,
          description: t.description,
          parametersJsonSchema: t.parameters,
        })),
      },
    ],
  };
  return {
    start: (prior) =>
      prior.map((m) => ({ role: m.role === 'assistant' ? 'model' : 'user', parts: [{ text: m.content }] })),
    async call(conv) {
      const stream = await ai.models.generateContentStream({ model, contents: conv, config });
      const parts: GeminiPart[] = [];
      const calls: RawCall[] = [];
      for await (const chunk of stream)
        for (const p of chunk.candidates?.[0]?.content?.parts ?? []) {
          parts.push(p);
          if (p.functionCall)
            calls.push({
              id: p.functionCall.id ?? '',
              name: p.functionCall.name ?? '',
              arguments: JSON.stringify(p.functionCall.args ?? {}),
            });
        }
      conv.push({ role: 'model', parts });
      return calls;
    },
    answer(conv, calls, results) {
      conv.push({
        role: 'user',
        parts: calls.map((c, i) => ({
          functionResponse: { ...(c.id ? { id: c.id } : {}), name: c.name, response: results[i] },
        })),
      });
    },
  };
}
