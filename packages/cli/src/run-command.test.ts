import { describe, expect, it } from 'vitest';
import { RunRequestSchema } from '@agentloop/protocol';
import { runRequestFromArgs } from './run-command.js';

describe('agentloop run: arguments → RunRequest', () => {
  it('maps model, fallbacks, tools, strategy, mode and limits into a request the API accepts', () => {
    const { prompt, body } = runRequestFromArgs([
      'What',
      'is',
      '17*23?',
      '--model',
      'deepseek/deepseek-chat',
      '--fallbacks',
      'google/gemini-2.5-flash, openai/gpt-4o-mini',
      '--tools',
      'calculator,current_time',
      '--strategy',
      'react',
      '--mode',
      'headless',
      '--max-iterations',
      '5',
    ]);
    expect(prompt).toBe('What is 17*23?');
    const parsed = RunRequestSchema.parse(body);
    expect(parsed).toMatchObject({
      model: { provider: 'deepseek', name: 'deepseek-chat' },
      fallbacks: [
        { provider: 'google', name: 'gemini-2.5-flash' },
        { provider: 'openai', name: 'gpt-4o-mini' },
      ],
      tools: ['calculator', 'current_time'],
      strategy: 'react',
      mode: 'headless',
      limits: { maxIterations: 5 },
    });
  });

  it('leaves out what was not given (the server applies the defaults)', () => {
    const { body } = runRequestFromArgs(['hi']);
    expect(Object.keys(body).sort()).toEqual(['input', 'model', 'tools']);
  });
});
