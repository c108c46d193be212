export * from './tracing-config.js';
export * from './tracing-state.js';
export * from './traceparent.js';
export * from './run-spans.js';
export * from './segment-spans.js';
