import type { ToolDefinition } from '../tool-definition.js';

/** `<server>__<tool>`: the name rules are SPEC §6's for MCP and OpenAPI tools alike. */
export { catalogName } from '../catalog-name.js';

/** What a server says of one of its tools (MCP `tools/list`), as far as the catalog needs it. */
export interface McpToolInfo {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  annotations?:
    | {
        readOnlyHint?: boolean | undefined;
        destructiveHint?: boolean | undefined;
        idempotentHint?: boolean | undefined;
      }
    | undefined;
}

/**
 * SPEC §6 trust mapping. Untrusted: every tool external, never retried (its annotations are the server's claims).
 * Trusted: the annotations with MCP's own defaults (readOnlyHint false, destructiveHint true, idempotentHint false).
 */
export function sideEffectOf(
  trust: 'trusted' | 'untrusted',
  a: McpToolInfo['annotations'],
): Pick<ToolDefinition, 'sideEffect' | 'retry'> {
  if (trust === 'untrusted') return { sideEffect: 'external', retry: 'never' };
  if (a?.readOnlyHint === true) return { sideEffect: 'read', retry: 'safe' };
  return {
    sideEffect: a?.destructiveHint === false ? 'reversible' : 'external',
    retry: a?.idempotentHint === true ? 'safe' : 'never',
  };
}

/**
 * A server's input schema as the registry compiles it (ajv, draft-07): `$schema` and `$id` dropped so that a 2020-12 schema
 * compiles too (ajv refuses a meta-schema it was not given; the keywords tools use are common to both drafts).
 */
export function inputSchemaOf(schema: Record<string, unknown>): Record<string, unknown> {
  // $id dropped too: ajv keeps schemas by id, and the same tool listed again (a reconnect) would clash with itself
  const { $schema: _dropped, $id: _id, ...rest } = schema;
  return rest.type === undefined ? { type: 'object', ...rest } : rest;
}

type ContentPart = {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  resource?: { uri?: string; text?: string; blob?: string; mimeType?: string };
  uri?: string;
  name?: string;
};

/** A part the model cannot read as text, as a short placeholder naming its type and size (never its base64). */
function placeholder(p: ContentPart): string {
  const bytes = (b64: string) =>
    Math.floor((b64.length * 3) / 4) - (b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0);
  if (p.type === 'image' || p.type === 'audio')
    return `[${p.type} ${p.mimeType ?? 'unknown type'}, ${bytes(p.data ?? '')} bytes]`;
  if (p.type === 'resource') {
    const r = p.resource ?? {};
    const size = r.blob !== undefined ? `${bytes(r.blob)} bytes` : `${Buffer.byteLength(r.text ?? '')} bytes of text`;
    return `[resource ${r.uri ?? ''} ${r.mimeType ?? 'unknown type'}, ${size}]`;
  }
  if (p.type === 'resource_link') return `[resource link ${p.uri ?? ''}${p.mimeType ? ` ${p.mimeType}` : ''}]`;
  return `[${p.type} content]`;
}

/** The text of a result's content: text parts as they are, every other part as a placeholder, joined with `\n`. */
export function contentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return (content as ContentPart[]).map((p) => (p.type === 'text' ? (p.text ?? '') : placeholder(p))).join('\n');
}

/** SPEC §6: a result's `structuredContent`, else its content as text. */
export function toolResultOf(result: { structuredContent?: unknown; content?: unknown }): unknown {
  if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent;
  return contentText(result.content);
}
