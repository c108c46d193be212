export * from './http-client.js';
export * from './enqueue-run.js';
export * from './sse.js';
