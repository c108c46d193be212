import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const SERVICES = ['@agentloop/orchestrator', '@agentloop/tool-runner', '@agentloop/compressor'];

const restrict = (forbidden) => ({
  'no-restricted-imports': [
    'error',
    {
      paths: forbidden.map((name) => ({
        name,
        message:
          'dependencies point one way: protocol ← client, protocol ← llm ← runtime ← services ← cli; test support only in tests',
      })),
      patterns: forbidden.map((name) => ({ group: [`${name}/*`], message: 'dependencies point one way' })),
    },
  ],
});

/** What a package may not import: its tests may use the test support, its shipped code may not. */
function layer(dir, forbidden) {
  return [
    {
      files: [`${dir}/src/**/*.ts`],
      ignores: ['**/*.test.ts', '**/test-support/**'],
      rules: restrict([...forbidden, '@agentloop/testing']),
    },
    { files: [`${dir}/src/**/*.test.ts`, `${dir}/src/test-support/**/*.ts`], rules: restrict(forbidden) },
  ];
}

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '.tools/**', 'packages/testing/fixtures/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  // Files stay small: one concept each (tests and recorded-fixture replays excepted).
  {
    files: ['packages/*/src/**/*.ts', 'packages/*/src/**/*.tsx', 'services/*/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'max-lines': ['error', 300] },
  },
  // Dependencies point one way: protocol ← llm ← runtime ← services ← cli. A service never imports another one.
  ...layer('packages/protocol', ['@agentloop/llm', '@agentloop/runtime', ...SERVICES, '@agentloop/cli', 'ioredis']),
  ...layer('packages/client', ['@agentloop/llm', '@agentloop/runtime', ...SERVICES, '@agentloop/cli', 'ioredis']),
  // the web console runs in a browser: the client and the protocol only
  {
    files: ['packages/console/src/**/*.ts', 'packages/console/src/**/*.tsx'],
    rules: restrict([
      '@agentloop/llm',
      '@agentloop/runtime',
      ...SERVICES,
      '@agentloop/cli',
      '@agentloop/testing',
      'ioredis',
      'bullmq',
    ]),
  },
  ...layer('packages/llm', ['@agentloop/runtime', ...SERVICES, '@agentloop/cli', 'bullmq', 'ioredis']),
  ...layer('packages/runtime', [...SERVICES, '@agentloop/cli']),
  // the CLI ships in the image: no test support in it (the e2e package holds the stacks, the demo and the tests)
  ...layer('packages/cli', []),
  ...SERVICES.map((svc) =>
    layer(`services/${svc.split('/')[1]}`, [...SERVICES.filter((o) => o !== svc), '@agentloop/cli']),
  ).flat(),
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' } },
  },
);
