export * from './http-client.js';
export * from './enqueue-run.js';
export * from './sse.js';
export * from './follow-run.js';
export * from './api-error.js';
