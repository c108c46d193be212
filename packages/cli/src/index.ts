export * from './serve.js';
export * from './sse-client.js';
export * from './render-events.js';
