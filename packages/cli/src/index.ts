export * from './serve.js';
export * from '@agentloop/client';
export * from './render-events.js';
