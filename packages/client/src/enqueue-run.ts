// Queue intake (SPEC §2): one implementation, in protocol (where SPEC places it), loading the backend's bullmq lazily.
export { enqueueRun, type EnqueueRunOptions } from '@agentloop/protocol';
