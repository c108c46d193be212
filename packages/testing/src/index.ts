export * from './mock-llm/types.js';
export * from './mock-llm/openai-wire.js';
export * from './mock-llm/server.js';
export * from './mock-llm/demo-agent.js';
export * from './fixtures.js';
export * from './redis.js';
export * from './invariants.js';
export * from './paths.js';
