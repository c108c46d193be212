import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '@agentloop/protocol';
import { startMockLlm, type MockLlmServer, type ReplySpec } from '@agentloop/testing';
import { OpenAIResponsesModel } from './openai-responses-model.js';
import { toOpenAIMessages } from '../convert-messages.js';
import { OpenAIChatModel } from '../openai-chat-model.js';
import { toGeminiContents } from '../../google/convert-contents.js';
import type { ModelCallRequest, ModelResponse } from '../../../types.js';

type Item = Record<string, any>;

describe('OpenAIResponsesModel against the strict mock Responses API', () => {
  let mock: MockLlmServer;
  let next: (req: { messages: Message[] }) => ReplySpec = () => ({ text: 'ok' });
  let model: OpenAIResponsesModel;
  beforeAll(async () => {
    mock = await startMockLlm({ script: (req) => next(req) });
    model = new OpenAIResponsesModel({ apiKey: 'sk-test', baseURL: `${mock.url}/v1` });
  });
  afterAll(async () => {
    await mock.close();
  });

  const call = (req: Partial<ModelCallRequest> & { name?: string }) =>
    model.call({
      model: { provider: 'openai', name: req.name ?? 'gpt-4o-mini', params: {}, ...req.model },
      messages: [{ role: 'user', content: 'q' }],
      tools: null,
      ...req,
    });
  const lastBody = () => mock.journal.at(-1)!.req.body as Item;
  /** The assistant message as the loop records it (the planner notes provider and model). */
  const recorded = (res: ModelResponse): Message => ({
    ...res.message,
    providerData: { ...res.message.providerData, provider: res.provider, model: res.model },
  });

  it('sends a stateless request: store false, no previous_response_id, tools in order with strict false, system as developer messages', async () => {
    next = () => ({ text: 'hi' });
    const res = await call({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'q' },
      ],
      tools: [
        { name: 'zeta', description: 'z', parameters: { type: 'object', properties: {} } },
        { name: 'alpha', description: 'a', parameters: { type: 'object' } },
      ],
      stop: ['\nObservation:'],
      cacheKey: 'run_123',
      model: {
        provider: 'openai',
        name: 'gpt-4o-mini',
        params: {
          temperature: 0,
          store: true,
          previous_response_id: 'resp_x',
          include: ['x'],
          input: 'evil',
          max_tokens: 50,
          reasoning_effort: 'low',
        },
      },
    });
    expect(res.message.content).toBe('hi');
    const body = lastBody();
    expect(body).toMatchObject({
      model: 'gpt-4o-mini',
      store: false,
      stream: true,
      temperature: 0,
      prompt_cache_key: 'run_123',
      max_output_tokens: 50,
      reasoning: { effort: 'low' },
    });
    for (const k of [
      'previous_response_id',
      'include',
      'stop',
      'instructions',
      'max_tokens',
      'reasoning_effort',
      'messages',
    ])
      expect(body).not.toHaveProperty(k);
    expect(body.input).toEqual([
      { type: 'message', role: 'developer', content: 'be brief' },
      { type: 'message', role: 'user', content: 'q' },
    ]);
    expect(body.tools).toEqual([
      {
        type: 'function',
        name: 'zeta',
        description: 'z',
        parameters: { type: 'object', properties: {} },
        strict: false,
      },
      { type: 'function', name: 'alpha', description: 'a', parameters: { type: 'object' }, strict: false },
    ]);
    expect(mock.violations).toEqual([]);
  });

  it('asks reasoning models for encrypted reasoning (others never), passes reasoning params, and sends structured output as text.format', async () => {
    next = () => ({ text: '{"a":"x"}' });
    await call({
      name: 'gpt-5-mini',
      model: {
        provider: 'openai',
        name: 'gpt-5-mini',
        params: { reasoning: { effort: 'low', summary: 'auto' }, text: { verbosity: 'low' } },
      },
      output: { name: 'answer', schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } },
    });
    expect(lastBody()).toMatchObject({
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'low', summary: 'auto' },
      text: {
        verbosity: 'low',
        format: {
          type: 'json_schema',
          name: 'answer',
          strict: true,
          schema: { type: 'object', additionalProperties: false },
        },
      },
    });
    await call({ name: 'gpt-5-chat-latest' });
    expect(lastBody()).not.toHaveProperty('include');
    await call({ name: 'o3' });
    expect(lastBody().include).toEqual(['reasoning.encrypted_content']);
  });

  it('streams text and reasoning summaries to the callbacks; usage counts reasoning inside completion, cached inside prompt', async () => {
    next = () => ({
      reasoning: 'Step one.\n\nStep two.',
      text: 'The answer.',
      chunking: 'fine',
      usage: { prompt: 100, cached: 64, completion: 10, reasoning: 30 },
    });
    const text: string[] = [];
    const reasoning: string[] = [];
    const res = await call({
      name: 'gpt-5-mini',
      onTextDelta: (t) => text.push(t),
      onReasoningDelta: (t) => reasoning.push(t),
    });
    expect(text.join('')).toBe('The answer.');
    expect(reasoning.join('')).toBe('Step one.\n\nStep two.');
    expect(res.message.reasoning).toBe('Step one.\n\nStep two.');
    expect(res.usage).toEqual({ promptTokens: 100, completionTokens: 40, reasoningTokens: 30, cachedTokens: 64 });
    expect(res.finishReason).toBe('stop');
  });

  it('round-trips reasoning items byte for byte, in order, before the calls they preceded, over three calls', async () => {
    next = (req) => {
      const step = req.messages.filter((m) => m.role === 'assistant').length;
      if (step === 0)
        return {
          reasoning: 'plan two lookups',
          text: 'Looking up both.',
          toolCalls: [
            { name: 'lookup', args: { k: 1 } },
            { name: 'lookup', args: { k: 2 } },
          ],
          chunking: 'interleaved',
        };
      if (step === 1) return { reasoning: 'one more', toolCalls: [{ name: 'lookup', args: { k: 3 } }] };
      return { text: 'all done' };
    };
    const tools = [{ name: 'lookup', description: '', parameters: { type: 'object' } }];
    const transcript: Message[] = [{ role: 'user', content: 'go' }];
    const items: Item[][] = [];
    for (let i = 0; i < 3; i++) {
      const res = await call({ name: 'gpt-5-mini', messages: transcript, tools });
      items.push((lastBody().input as Item[]).filter((x) => x.type === 'reasoning'));
      transcript.push(recorded(res));
      for (const c of res.message.toolCalls ?? [])
        transcript.push({ role: 'tool', toolCallId: c.id, content: '{"ok":true}' });
    }
    expect(transcript.at(-1)!.content).toBe('all done');
    const [first, second] = transcript.filter((m) => m.role === 'assistant');
    const issued = (m: Message) => (m.providerData!.openaiReasoning as Item[]).map((r) => r.encrypted_content);
    expect(
      issued(first!).every(
        (e) => mock.ledger.encryptedOf((first!.providerData!.openaiReasoning as Item[])[0]!.id) === e,
      ),
    ).toBe(true);
    // call 2 carries the first reasoning item, call 3 both, each exactly as issued
    expect(items[0]).toEqual([]);
    expect(items[1]!.map((r) => r.encrypted_content)).toEqual(issued(first!));
    expect(items[2]!.map((r) => r.encrypted_content)).toEqual([...issued(first!), ...issued(second!)]);
    const input = lastBody().input as Item[];
    const kinds = input.map((x) =>
      x.type === 'message'
        ? `${x.role}${x.id ? '#id' : ''}`
        : x.type === 'function_call'
          ? `fc${x.id ? '#id' : ''}`
          : x.type,
    );
    expect(kinds).toEqual([
      'user',
      'reasoning',
      'assistant#id',
      'fc#id',
      'fc#id',
      'function_call_output',
      'function_call_output',
      'reasoning',
      'fc#id',
      'function_call_output',
    ]);
    expect(JSON.stringify(input[1])).toBe(JSON.stringify((first!.providerData!.openaiReasoning as Item[])[0]));
    expect(first!.toolCalls!.map((c) => c.providerData?.itemId)).toEqual([
      expect.stringMatching(/^fc_/),
      expect.stringMatching(/^fc_/),
    ]);
  });

  it('sends another provider’s turns without reasoning or item ids, and OpenAI’s call_id where the loop renamed a call', async () => {
    next = () => ({ text: 'fine' });
    const foreign: Message[] = [
      { role: 'user', content: 'q' },
      {
        role: 'assistant',
        content: null,
        reasoning: 'gemini thoughts',
        toolCalls: [
          { id: 'call_g', name: 'f', arguments: '{}', providerData: { provider: 'google', thoughtSignature: 'sig' } },
        ],
        providerData: {
          provider: 'google',
          openaiReasoning: [{ type: 'reasoning', id: 'rs_fake', encrypted_content: 'x' }],
          openaiOutput: [],
        },
      },
      { role: 'tool', toolCallId: 'call_g', content: 'r1' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          {
            id: 'call_ours',
            name: 'f',
            arguments: '{}',
            providerData: { provider: 'openai', itemId: 'fc_1', providerCallId: 'call_theirs' },
          },
        ],
        providerData: { provider: 'openai' },
      },
      { role: 'tool', toolCallId: 'call_ours', content: 'r2' },
    ];
    await call({ name: 'gpt-5-mini', messages: foreign });
    const input = lastBody().input as Item[];
    expect(input.filter((x) => x.type === 'reasoning')).toEqual([]);
    expect(input.filter((x) => x.type === 'function_call').map((x) => [x.id, x.call_id])).toEqual([
      [undefined, 'call_g'],
      [undefined, 'call_theirs'],
    ]);
    expect(input.filter((x) => x.type === 'function_call_output').map((x) => x.call_id)).toEqual([
      'call_g',
      'call_theirs',
    ]);
    expect(JSON.stringify(input)).not.toMatch(/thoughtSignature|gemini thoughts/);
  });

  it('Chat Completions carries prompt_cache_key for provider openai only', async () => {
    next = () => ({ text: 'ok' });
    for (const [provider, path] of [
      ['openai', 'v1'],
      ['deepseek', 'deepseek/v1'],
    ] as const) {
      const chat = new OpenAIChatModel({ provider, apiKey: 'k', baseURL: `${mock.url}/${path}` });
      await chat.call({
        model: { provider, name: 'gpt-4o-mini', params: {} },
        messages: [{ role: 'user', content: 'q' }],
        tools: null,
        cacheKey: 'run_9',
      });
      expect([mock.journal.at(-1)!.req.wire, lastBody().prompt_cache_key]).toEqual([
        'chat',
        provider === 'openai' ? 'run_9' : undefined,
      ]);
    }
  });

  it('never sends reasoning items to a non-reasoning model, nor to Chat Completions or Gemini', async () => {
    next = (req) =>
      req.messages.some((m) => m.role === 'tool')
        ? { text: 'end' }
        : { reasoning: 'r', toolCalls: [{ name: 'f', args: {} }] };
    const first = await call({ name: 'o4-mini', tools: [{ name: 'f', description: '', parameters: {} }] });
    const m = recorded(first);
    expect(m.providerData!.openaiReasoning).toHaveLength(1);
    const transcript: Message[] = [
      { role: 'user', content: 'q' },
      m,
      { role: 'tool', toolCallId: m.toolCalls![0]!.id, content: 'x' },
    ];
    await call({ name: 'gpt-4o-mini', messages: transcript });
    const sent = JSON.stringify(lastBody().input);
    expect(sent).not.toMatch(/"reasoning"|encrypted_content|"fc_/);
    const secret = (m.providerData!.openaiReasoning as Item[])[0]!.encrypted_content as string;
    expect(JSON.stringify(toOpenAIMessages(transcript, { sendReasoning: true }))).not.toContain(secret);
    expect(JSON.stringify(toGeminiContents(transcript, { requireSignatures: true }))).not.toContain(secret);
  });
});
