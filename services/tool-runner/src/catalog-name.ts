import { createHash } from 'node:crypto';

const MAX_NAME = 64;
const shortHash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8);

/**
 * `<prefix>__<name>` (an MCP server's tool, an OpenAPI entry's operation) with characters outside [a-zA-Z0-9_-]
 * replaced by `_`; a name longer than 64 characters, or one already in `taken`, is cut and given a hash of both names
 * (stable across restarts and refreshes).
 */
export function catalogName(prefix: string, name: string, taken: ReadonlySet<string>): string {
  const plain = `${prefix}__${name}`.replace(/[^a-zA-Z0-9_-]/g, '_');
  if (plain.length <= MAX_NAME && !taken.has(plain)) return plain;
  const suffix = `_${shortHash(`${prefix}\0${name}`)}`;
  return `${plain.slice(0, MAX_NAME - suffix.length)}${suffix}`;
}
