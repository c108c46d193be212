import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessStack } from '../test-support/stack.js';

/** First contact: a run whose provider no orchestrator has a key for is refused at intake, not failed later. */
describe('providers the deployment cannot call', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({
      script: () => ({ text: 'ok' }),
      env: { GEMINI_API_KEY: '', AGENTLOOP_MODEL_BASE_URLS: 'http://127.0.0.1:9/gemini' },
    }); // no Gemini key
  }, 30_000);
  afterAll(() => s?.stop());

  it('400 at the field path for the model and for each fallback; a configured provider runs', async () => {
    const bad = await s.a.createRun({ input: 'hi', model: { provider: 'google', name: 'gemini-2.5-flash' } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.details).toEqual([
      expect.objectContaining({ path: ['model', 'provider'], code: 'not_configured' }),
    ]);
    const fallback = await s.a.createRun({
      input: 'hi',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      fallbacks: [{ provider: 'google', name: 'gemini-2.5-flash' }],
    });
    expect(fallback.status).toBe(400);
    expect(fallback.json.error.details[0].path).toEqual(['fallbacks', '0', 'provider']);
    // a model on an endpoint of its own (the operator's to allow) does not use the provider's key: not refused for it
    expect(
      (
        await s.a.createRun({
          input: 'hi',
          model: { provider: 'google', name: 'gemini-2.5-flash', baseUrl: 'http://127.0.0.1:9/gemini' },
        })
      ).status,
    ).toBe(202);
    const ok = await s.a.createRun({ input: 'hi', model: { provider: 'deepseek', name: 'deepseek-chat' } });
    expect(ok.status).toBe(202);
    expect((await s.a.waitTerminal(ok.json.id)).status).toBe('completed');
  });
});
