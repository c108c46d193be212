import OpenAI from 'openai';
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool, type AgentInputItem } from '@openai/agents';
import { nodeFetch } from '@agentloop/llm';
import type { Loop } from './loop-window.js';

/**
 * The in-process OpenAI Agents SDK on the core workload (issue 26's peer): one Agent with the no-op tool, each run
 * `run(agent, prior, { stream: true })` read to the end — the same mock (Chat Completions, the product's `openai`
 * provider), through the same openai SDK on the same transport (nodeFetch), the same prior transcript; nothing
 * persisted, tracing off (it would export to a service this machine cannot reach).
 */
export class AgentsSdkLoop implements Loop {
  iterations = 0;
  private readonly agent: Agent;
  private readonly input: AgentInputItem[];

  constructor(mockUrl: string, model: string, prior: ReadonlyArray<{ role: string; content: string }>) {
    setTracingDisabled(true);
    const client = new OpenAI({ apiKey: 'sk-bench', baseURL: `${mockUrl}/v1`, maxRetries: 0, fetch: nodeFetch });
    const noop = tool({
      name: 'noop',
      description: 'does nothing',
      strict: false,
      parameters: { type: 'object', properties: {}, required: [], additionalProperties: true },
      execute: async () => ({ ok: true }),
    });
    this.agent = new Agent({ name: 'bench', model: new OpenAIChatCompletionsModel(client, model), tools: [noop] });
    this.input = prior.map((m) =>
      m.role === 'assistant'
        ? { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: m.content }] }
        : { role: 'user', content: m.content },
    ) as AgentInputItem[];
  }

  async run(): Promise<void> {
    const result = await run(this.agent, this.input, { stream: true, maxTurns: 100 });
    for await (const ev of result)
      if (ev.type === 'raw_model_stream_event' && ev.data.type === 'response_done') this.iterations++;
    await result.completed;
  }
}
