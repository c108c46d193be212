import { z } from 'zod';
import { MessageSchema, transcriptProblems } from './message.js';
import { paramsIssues } from './model-params.js';

export const ProviderSchema = z.enum(['openai', 'google', 'deepseek', 'openai-compatible']);
export type Provider = z.infer<typeof ProviderSchema>;

/** The name a call the model sent without a name is stored under: reserved, no tool may have it (SPEC §3). */
export const UNNAMED_TOOL = '_unnamed';
export const TOOL_NAME_RE = /^(?!_unnamed$)[a-zA-Z0-9_-]{1,64}$/;
export const ToolNameSchema = z.string().regex(TOOL_NAME_RE, 'tool names match [a-zA-Z0-9_-]{1,64}');

export const ModelSpecSchema = z
  .object({
    provider: ProviderSchema,
    // a model name becomes part of request paths (Gemini: /models/<name>): no '%', '?', '#', spaces or dot segments
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}$/, 'a model name: letters, digits and . _ : @ / + -')
      .refine(
        (n) => !n.split('/').some((seg) => seg === '.' || seg === '..'),
        'a model name has no . or .. path segments',
      ),
    contextWindow: z.number().int().min(1024).max(10_000_000).optional(),
    /**
     * openai only: "responses" [default] speaks OpenAI's Responses API (stateless; reasoning items of the o-series and
     * gpt-5 family round-trip; an endpoint without it, 404, falls back to Chat Completions), "chat" Chat Completions.
     */
    api: z.enum(['responses', 'chat']).optional(),
    params: z.record(z.string(), z.unknown()).default({}),
    /** openai-compatible only: the endpoint, ending in /v1. */
    baseUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** The NAME of an environment variable holding the key (credentials never travel in requests). */
    apiKeyEnv: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name')
      .optional(),
  })
  .superRefine((m, ctx) => {
    if (m.provider === 'openai-compatible' && !m.baseUrl)
      ctx.addIssue({
        code: 'custom',
        path: ['baseUrl'],
        message: 'model.baseUrl is required for provider openai-compatible',
      });
  });
export type ModelSpec = z.infer<typeof ModelSpecSchema>;
/** A model spec as a request brings it: its known params checked too (stored specs are not re-checked). */
const RequestModelSpecSchema = ModelSpecSchema.superRefine(paramsIssues);

export const ClientToolSchema = z.object({
  name: ToolNameSchema,
  description: z.string().max(4000).default(''),
  parameters: z.record(z.string(), z.unknown()).default({ type: 'object', properties: {} }),
});
export type ClientTool = z.infer<typeof ClientToolSchema>;

const positiveIntOrNull = z.number().int().positive().nullable().default(null);

export const LimitsSchema = z.object({
  maxIterations: z.number().int().min(1).max(200).default(25),
  onMaxIterations: z.enum(['finalize', 'fail']).default('finalize'),
  maxTotalTokens: positiveIntOrNull,
  maxCostUsd: z.number().positive().nullable().default(null),
  maxWallMs: positiveIntOrNull,
  maxToolCalls: positiveIntOrNull,
  repeatLimit: z.number().int().min(2).max(100).default(3),
});
export type Limits = z.infer<typeof LimitsSchema>;

export const ApprovalSchema = z.object({
  require: z.array(ToolNameSchema).max(200).default([]),
  autoApprove: z.array(ToolNameSchema).max(200).default([]),
  timeoutMs: z
    .number()
    .int()
    .min(1000)
    .max(30 * 86_400_000)
    .default(86_400_000),
  onTimeout: z.enum(['deny', 'fail']).default('deny'),
});
export type Approval = z.infer<typeof ApprovalSchema>;

export const ContextSchema = z.object({
  compressAt: z.number().gt(0).max(1).default(0.8),
  compression: z.enum(['summarize', 'prune', 'off']).default('summarize'),
  toolResultMaxTokens: z.number().int().min(100).max(1_000_000).default(20_000),
});
export type ContextOptions = z.infer<typeof ContextSchema>;

/** A thread id (SPEC §2): `[A-Za-z0-9_-]{1,128}`, scoped to its tenant. */
export const ThreadIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'a thread id matches [A-Za-z0-9_-]{1,128}');

export const RunRequestSchema = z
  .object({
    input: z.union([z.string().min(1).max(1_000_000), z.array(MessageSchema).min(1).max(10_000)]),
    system: z.string().max(1_000_000).optional(),
    model: RequestModelSpecSchema,
    fallbacks: z.array(RequestModelSpecSchema).max(5).default([]),
    tools: z.array(ToolNameSchema).max(128).default([]),
    clientTools: z.array(ClientToolSchema).max(128).default([]),
    strategy: z.enum(['function_calling', 'react']).default('function_calling'),
    mode: z.enum(['interactive', 'headless']).default('interactive'),
    limits: LimitsSchema.default(LimitsSchema.parse({})),
    approval: ApprovalSchema.default(ApprovalSchema.parse({})),
    context: ContextSchema.default(ContextSchema.parse({})),
    metadata: z.record(z.string(), z.unknown()).default({}),
    // structured output: the schema's own rules (it compiles, its size, OpenAI's strict mode) are intake's to check
    output: z
      .object({
        schema: z.record(z.string(), z.unknown()),
        name: z
          .string()
          .regex(/^[A-Za-z0-9_-]{1,64}$/, 'an output name matches [A-Za-z0-9_-]{1,64}')
          .default('answer'),
      })
      .strict()
      .optional(),
    /** Continue this conversation (SPEC §2 Threads); `threadPolicy` says what a request for a busy thread gets. */
    threadId: ThreadIdSchema.optional(),
    threadPolicy: z.enum(['reject', 'enqueue', 'interrupt']).default('reject'),
    // notify: the shape is checked here; intake checks the tenant's secret and the URL (WebhookPolicy)
    notify: z
      .object({
        url: z.url({ protocol: /^https?$/ }).max(8192),
        events: z
          .array(
            z.enum([
              'run.paused',
              'run.completed',
              'run.failed',
              'run.cancelled',
              'run.queued',
              'run.started',
              'run.resumed',
            ]),
          )
          .min(1)
          .optional(),
      })
      .strict()
      .optional(),
  })
  .superRefine((r, ctx) => {
    if (Array.isArray(r.input)) {
      for (const p of transcriptProblems(r.input)) ctx.addIssue({ code: 'custom', path: ['input'], message: p });
      const last = r.input[r.input.length - 1];
      if (last && last.role !== 'user' && last.role !== 'tool')
        ctx.addIssue({
          code: 'custom',
          path: ['input'],
          message: 'an input transcript must end with a user or tool message',
        });
    }
    const names = [...r.tools, ...r.clientTools.map((t) => t.name)];
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup) ctx.addIssue({ code: 'custom', path: ['clientTools'], message: `tool '${dup}' is listed twice` });
  });
export type RunRequestInput = z.input<typeof RunRequestSchema>;
export type RunRequest = z.infer<typeof RunRequestSchema>;
