import { ToolFailure } from '../tool-definition.js';
import type { ParameterInfo } from './document.js';
import type { ArgumentPlan } from './tool-schema.js';

export interface BuiltRequest {
  url: string;
  headers: Record<string, string>;
  body?: string;
}

const bad = (message: string) => new ToolFailure('invalid_arguments', message);
const scalar = (v: unknown) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : String(v));

/** A value in OpenAPI's `simple` style: arrays comma-joined, objects as key,value pairs (key=value exploded). */
function simple(p: ParameterInfo, v: unknown, encode: (s: string) => string): string {
  if (p.json) return encode(JSON.stringify(v));
  if (Array.isArray(v)) return v.map((x) => encode(scalar(x))).join(',');
  if (v !== null && typeof v === 'object')
    return Object.entries(v)
      .map(([k, x]) => `${encode(k)}${p.explode ? '=' : ','}${encode(scalar(x))}`)
      .join(',');
  return encode(scalar(v));
}

/** A query parameter's pairs: `form` style (exploded by default), `spaceDelimited`, `pipeDelimited`, `deepObject`. */
function queryPairs(p: ParameterInfo, v: unknown): Array<[string, string]> {
  if (p.json) return [[p.name, JSON.stringify(v)]];
  const explode = p.explode ?? (p.style ?? 'form') === 'form';
  if (Array.isArray(v)) {
    if (explode) return v.map((x) => [p.name, scalar(x)]);
    return [[p.name, v.map(scalar).join(p.style === 'spaceDelimited' ? ' ' : p.style === 'pipeDelimited' ? '|' : ',')]];
  }
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v);
    if (p.style === 'deepObject') return entries.map(([k, x]) => [`${p.name}[${k}]`, scalar(x)]);
    if (explode) return entries.map(([k, x]) => [k, scalar(x)]);
    return [[p.name, entries.flatMap(([k, x]) => [k, scalar(x)]).join(',')]];
  }
  return [[p.name, scalar(v)]];
}

/**
 * The request an operation's call makes: path parameters percent-encoded into their segments (a value cannot add a
 * segment, climb out of the base path or leave a segment empty), query parameters in the query string, header and
 * cookie parameters as headers, the body as JSON. The URL is checked to stay under the entry's base URL.
 */
export function buildRequest(
  baseUrl: string,
  pathTemplate: string,
  plan: ArgumentPlan,
  args: Record<string, unknown>,
): BuiltRequest {
  const base = new URL(baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const at = (name: string) => plan.params.find((p) => p.in === 'path' && p.name === name);
  const path = pathTemplate.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const p = at(name);
    const v = p ? args[p.property] : undefined;
    if (p === undefined || v === undefined) throw bad(`missing path parameter '${name}'`);
    const segment = simple(p, v, encodeURIComponent);
    // "." and ".." would be path navigation (URL parsers resolve them, %2e too): never a value
    if (segment === '' || segment === '.' || segment === '..')
      throw bad(`path parameter '${name}' may not be empty, '.' or '..'`);
    return segment;
  });
  const url = new URL(`${base.origin}${basePath}${path.startsWith('/') ? '' : '/'}${path}`);
  if (url.origin !== base.origin || !(url.pathname === basePath || url.pathname.startsWith(`${basePath}/`)))
    throw bad('the arguments lead outside the base URL');
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (const p of plan.params) {
    const v = args[p.property];
    if (v === undefined || p.in === 'path') continue;
    if (p.in === 'query') for (const [k, x] of queryPairs(p, v)) query.append(k, x);
    else if (p.in === 'header') headers[p.name] = simple(p, v, (s) => s);
    else cookies.push(`${p.name}=${simple(p, v, encodeURIComponent)}`);
  }
  if (cookies.length) headers.cookie = cookies.join('; ');
  for (const [k, v] of Object.entries(headers))
    if (/[^\t\x20-\x7e\x80-\xff]/.test(v)) throw bad(`header parameter '${k}' holds characters a header cannot carry`);
  const search = query.toString();
  if (search) url.search = search;
  const body =
    plan.body && args[plan.body.property] !== undefined ? JSON.stringify(args[plan.body.property]) : undefined;
  if (body !== undefined) headers['content-type'] = plan.body!.mediaType;
  return { url: url.href, headers, ...(body !== undefined ? { body } : {}) };
}
