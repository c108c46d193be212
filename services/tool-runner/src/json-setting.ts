import { readFileSync } from 'node:fs';
import type { z } from 'zod';

/**
 * A setting holding a JSON array (AGENTLOOP_MCP_SERVERS, AGENTLOOP_OPENAPI_TOOLS): the JSON itself, or the path of a
 * file holding it. Throws one message naming every problem and the entry it is in, so that the process stops at start
 * instead of serving a catalog short of tools. Entries are named by `name`, which must be unique.
 */
export function parseJsonSetting<T extends { name: string }>(
  variable: string,
  value: string | undefined,
  schema: z.ZodType<T[]>,
  what: string,
): T[] {
  const text = value?.trim() ?? '';
  if (!text) return [];
  let raw: unknown;
  const inline = /^[[{]/.test(text);
  const source = inline ? variable : `${variable} (file ${text})`;
  try {
    raw = JSON.parse(inline ? text : readFileSync(text, 'utf8'));
  } catch (e) {
    throw new Error(`${source}: not a JSON array of ${what}, nor a readable file holding one: ${(e as Error).message}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new Error(
      `${source}: ${parsed.error.issues.map((i) => `${i.path.length ? `[${i.path.join('.')}]` : '(root)'} ${i.message}`).join('; ')}`,
    );
  const seen = new Set<string>();
  for (const s of parsed.data) {
    if (seen.has(s.name)) throw new Error(`${source}: the name '${s.name}' is used twice`);
    seen.add(s.name);
  }
  return parsed.data;
}
