import { TOOL_NAME_RE, type ToolErrorCode } from '@agentloop/protocol';
import { z } from 'zod';

export interface ToolContext {
  runId: string;
  callId: string;
  tenantId: string;
  /** `runId:callId`: the same for every execution of one call; pass it to the systems the tool changes. */
  idempotencyKey: string;
  signal: AbortSignal;
  logger: {
    info: (...a: unknown[]) => void;
    warn: (...a: unknown[]) => void;
    error: (...a: unknown[]) => void;
    debug: (...a: unknown[]) => void;
  };
}

/** A zod schema as a tool's parameters (detected by its safeParse). */
export type ZodLike = {
  safeParse: (v: unknown) => {
    success: boolean;
    data?: unknown;
    error?: { issues: Array<{ path: PropertyKey[]; message: string }> };
  };
};

/** SPEC §6: what a tool module's default export holds. */
export interface ToolDefinition {
  name: string;
  description?: string;
  parameters: Record<string, unknown> | ZodLike;
  sideEffect: 'read' | 'reversible' | 'external' | 'critical';
  pool?: string;
  timeoutMs?: number;
  retry?: 'safe' | 'never';
  /** SPEC §6: "process" runs each call in a child process of its own (isolation/process-isolation.ts). */
  isolation?: 'none' | 'process';
  execute(args: Record<string, unknown>, ctx: ToolContext): unknown;
}

/**
 * Thrown by built-in tools to answer with a specific error code (any other throw is tool_error). `retryable` overrides
 * the code's default (an MCP server out of reach: a tool_error worth trying again).
 */
export class ToolFailure extends Error {
  constructor(
    readonly code: ToolErrorCode,
    message: string,
    readonly retryable?: boolean,
  ) {
    super(message);
  }
}

export const ToolDefinitionSchema = z.object({
  name: z.string().regex(TOOL_NAME_RE, 'tool names match [a-zA-Z0-9_-]{1,64} (and _unnamed is reserved)'),
  description: z.string().optional(),
  parameters: z.custom<ToolDefinition['parameters']>(
    (v) => !!v && typeof v === 'object',
    'parameters must be a JSON Schema object or a zod schema',
  ),
  sideEffect: z.enum(['read', 'reversible', 'external', 'critical']),
  pool: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,40}$/, 'pool names are lowercase letters, digits and -')
    .optional(),
  timeoutMs: z
    .number()
    .int()
    .positive()
    .max(24 * 3_600_000)
    .optional(),
  retry: z.enum(['safe', 'never']).optional(),
  isolation: z.enum(['none', 'process']).optional(),
  execute: z.custom<ToolDefinition['execute']>((v) => typeof v === 'function', 'execute must be a function'),
});
