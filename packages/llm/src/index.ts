export * from './types.js';
export * from './stream/tool-call-assembler.js';
export * from './providers/openai/openai-chat-model.js';
export * from './providers/openai/convert-messages.js';
export * from './providers/openai/map-error.js';
export * from './providers/registry.js';
export * from './model-chain.js';
export * from './pricing.js';
