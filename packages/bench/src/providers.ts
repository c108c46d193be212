import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { RawApi } from './raw-model-call.js';

export const PROVIDER_NAMES = ['openai', 'openai-responses', 'google'] as const;
/** A `--provider` value: the adapter the core benchmark goes through (`openai` is Chat Completions). */
export type Provider = (typeof PROVIDER_NAMES)[number];

export const MODELS = {
  openai: { provider: 'openai', name: 'gpt-4o-mini', api: 'chat' },
  'openai-responses': { provider: 'openai', name: 'gpt-4o-mini', api: 'responses' },
  google: { provider: 'google', name: 'gemini-2.5-flash' },
} as const;

/** The API the raw loop calls for each provider: the one the product's adapter uses. */
export const RAW_API: Record<Provider, RawApi> = { openai: 'chat', 'openai-responses': 'responses', google: 'gemini' };

/** Whether @agentloop/llm carries the Responses adapter (packages/llm/src/providers/openai/responses/). */
function hasResponsesAdapter(): boolean {
  const llmMain = createRequire(import.meta.url).resolve('@agentloop/llm');
  return fs.existsSync(path.join(path.dirname(llmMain), 'providers', 'openai', 'responses'));
}

/** `pnpm bench --provider google` (or `openai,google`): which adapters the core benchmark goes through. */
export function providersFromArgs(argv: string[]): Provider[] {
  const i = argv.indexOf('--provider');
  const raw =
    i >= 0
      ? (argv[i + 1] ?? '')
      : (argv.find((a) => a.startsWith('--provider='))?.slice('--provider='.length) ?? 'openai');
  const list = raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const p of list)
    if (!(PROVIDER_NAMES as readonly string[]).includes(p))
      throw new Error(`--provider: ${p} is not one of ${PROVIDER_NAMES.join(', ')}`);
  if (list.includes('openai-responses') && !hasResponsesAdapter())
    throw new Error(
      '--provider openai-responses: @agentloop/llm has no Responses adapter yet (providers/openai/responses/)',
    );
  return list.length ? (list as Provider[]) : ['openai'];
}
