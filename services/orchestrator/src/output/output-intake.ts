import type { RunRequest } from '@agentloop/protocol';
import { chainNeedsStrictSchema, outputSchemaProblem, toStrictSchema } from '@agentloop/llm';
import type { IsolatedOutputValidator } from './isolated-validator.js';

export interface OutputIssue {
  path: string[];
  code: string;
  message: string;
  /** OpenAI strict mode: the rule the schema breaks. */
  rule?: string;
}

const pointer = (path: readonly string[]) => path.map((p) => `/${p.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/**
 * Why a request's `output.schema` cannot be used (400 at intake), or nothing: too large or deep, a regular
 * expression that could take exponential time, a schema ajv cannot compile, or — when the model or a fallback is
 * OpenAI — a schema whose strict form would mean something else (optional properties, open objects, keywords strict
 * mode does not support). Paths point into the request (`output.schema…`).
 */
export async function outputSchemaIssues(
  req: RunRequest,
  validator: Pick<IsolatedOutputValidator, 'compile'>,
): Promise<OutputIssue[]> {
  if (!req.output) return [];
  const schema = req.output.schema;
  const at = (path: readonly string[]) => ['output', 'schema', ...path];
  const bounds = outputSchemaProblem(schema);
  if (bounds) return [{ path: at(bounds.path), code: 'schema_too_complex', message: bounds.message }];
  const compiled = await validator.compile(schema);
  if (!compiled.ok)
    return [
      {
        path: at([]),
        code: 'invalid_schema',
        message: `output.schema is not a JSON Schema this service can compile: ${compiled.message}`,
      },
    ];
  if (chainNeedsStrictSchema([req.model, ...req.fallbacks])) {
    const strict = toStrictSchema(schema);
    if (!strict.ok)
      return [
        {
          path: at(strict.path),
          code: 'not_strict_compatible',
          rule: strict.rule,
          message: `OpenAI strict structured output, rule ${strict.rule}, at output.schema${pointer(strict.path)}: ${strict.message}`,
        },
      ];
  }
  return [];
}

/** The user-role message of a repair turn: what was wrong with the answer, and what to send instead. */
export function repairMessage(name: string, errors: readonly string[]): string {
  return [
    `Your final answer is not valid: it must be a JSON value matching the JSON Schema "${name}" of this task. Problems found:`,
    ...errors.map((e) => `- ${e}`),
    'Reply again with the corrected answer: the JSON value only, no prose and no code fence.',
  ].join('\n');
}
