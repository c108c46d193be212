export * from './tool-definition.js';
export * from './registry.js';
export * from './execute-tool-call.js';
export * from './tool-runner.js';
export * from './builtins/calculator.js';
export * from './builtins/http-get.js';
export * from './builtins/sleep.js';
