import SwaggerParser from '@apidevtools/swagger-parser';
import { isPrivateAddress } from '@agentloop/runtime';
import type { OpenApiToolsConfig } from './config.js';
import { guardedDocumentReader } from './document-reader.js';

type Schema = Record<string, unknown>;

/** One parameter of an operation, as the document says (its `$ref`s dereferenced). */
export interface ParameterInfo {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  description?: string;
  schema: Schema;
  style?: string;
  explode?: boolean;
  /** Given with `content` rather than `schema`: its value is sent as JSON. */
  json: boolean;
}

/** One operation of the document, as far as a tool needs it. */
export interface OperationInfo {
  operationId: string;
  method: string;
  path: string;
  summary?: string;
  description?: string;
  parameters: ParameterInfo[];
  body?: { required: boolean; mediaType: string; schema: Schema; description?: string };
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const JSON_MEDIA = /^application\/(?:[\w.+-]+\+)?json$/i;

interface RawParameter {
  name: string;
  in: ParameterInfo['in'];
  required?: boolean;
  description?: string;
  schema?: Schema;
  content?: Record<string, { schema?: Schema }>;
  style?: string;
  explode?: boolean;
}
interface RawOperation {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: RawParameter[];
  requestBody?: { required?: boolean; description?: string; content?: Record<string, { schema?: Schema }> };
}
type RawPathItem = Partial<Record<(typeof METHODS)[number], RawOperation>> & { parameters?: RawParameter[] };

/**
 * The entry's document (a path or an http(s) URL), parsed, validated and dereferenced by Swagger Parser, and the
 * operations the entry lists. Throws a message naming the entry for a document that cannot be loaded, is not
 * OpenAPI 3.x, lacks a listed operation, or has one whose request body is not JSON.
 */
export async function loadOperations(entry: OpenApiToolsConfig): Promise<OperationInfo[]> {
  const where = `AGENTLOOP_OPENAPI_TOOLS [${entry.name}]`;
  let api: { openapi?: string; swagger?: string; paths?: Record<string, RawPathItem> };
  const remote = /^https?:\/\//i.test(entry.spec);
  try {
    api = (await new SwaggerParser().validate(entry.spec, {
      // circular schemas stay `$ref`s (a tool's schema must be a tree): toolSchema turns them into open schemas
      dereference: { circular: 'ignore' },
      resolve: {
        // a document from a URL reads no local file through its $refs (they would end up in the catalog)
        ...(remote ? { file: false } : {}),
        // every URL read (the spec, its $refs', redirects) under the product's SSRF guard, not the library's own list;
        // a private or loopback address only for the spec URL's own origin of an entry with allowPrivate
        http: guardedDocumentReader(entry.spec, entry.allowPrivate),
      },
    })) as typeof api;
  } catch (e) {
    // the allowance can help only for a private address of the spec's own host (never a metadata or link-local one)
    const refused = /refused: (\S+) resolves to (\S+),/.exec((e as Error).message);
    const own = remote && refused?.[1] === URL.parse(entry.spec)?.hostname.replace(/^\[|\]$/g, '');
    const hint =
      !entry.allowPrivate && own && isPrivateAddress(refused![2]!)
        ? ' (a document on a private or internal host needs "allowPrivate": true)'
        : '';
    throw new Error(
      `${where}: the document ${entry.spec} cannot be loaded: ${firstLines((e as Error).message)}${hint}`,
    );
  }
  if (!api.openapi?.startsWith('3.'))
    throw new Error(
      `${where}: ${entry.spec} is not an OpenAPI 3.x document (${api.swagger ? `Swagger ${api.swagger}` : 'no openapi version'})`,
    );
  const found = new Map<string, OperationInfo>();
  for (const [path, item] of Object.entries(api.paths ?? {}))
    for (const method of METHODS) {
      const op = item[method];
      if (op?.operationId && entry.operations.includes(op.operationId))
        found.set(op.operationId, operationInfo(where, path, method, item.parameters ?? [], op));
    }
  const missing = entry.operations.filter((id) => !found.has(id));
  if (missing.length) {
    const known = Object.values(api.paths ?? {}).flatMap((item) =>
      METHODS.map((m) => item[m]?.operationId).filter((id): id is string => !!id),
    );
    throw new Error(
      `${where}: ${entry.spec} has no operation ${missing.map((m) => `'${m}'`).join(', ')} (its operationIds: ${known.slice(0, 30).join(', ') || 'none'}${known.length > 30 ? ', ...' : ''})`,
    );
  }
  return entry.operations.map((id) => found.get(id)!);
}

function operationInfo(
  where: string,
  path: string,
  method: string,
  shared: RawParameter[],
  op: RawOperation,
): OperationInfo {
  // an operation's parameter overrides the path's of the same name and location
  const byKey = new Map<string, RawParameter>();
  for (const p of [...shared, ...(op.parameters ?? [])]) byKey.set(`${p.in}\0${p.name}`, p);
  const parameters = [...byKey.values()].map((p): ParameterInfo => {
    const content = p.content ? Object.values(p.content)[0] : undefined;
    return {
      name: p.name,
      in: p.in,
      required: p.in === 'path' || p.required === true,
      ...(p.description ? { description: p.description } : {}),
      schema: p.schema ?? content?.schema ?? {},
      ...(p.style ? { style: p.style } : {}),
      ...(p.explode !== undefined ? { explode: p.explode } : {}),
      json: !p.schema && !!content,
    };
  });
  const info: OperationInfo = {
    operationId: op.operationId!,
    method: method.toUpperCase(),
    path,
    parameters,
    ...(op.summary ? { summary: op.summary } : {}),
    ...(op.description ? { description: op.description } : {}),
  };
  const rb = op.requestBody;
  if (rb?.content) {
    const mediaType = Object.keys(rb.content).find((m) => JSON_MEDIA.test(m.split(';')[0]!.trim()));
    if (mediaType)
      info.body = {
        required: rb.required === true,
        mediaType,
        schema: rb.content[mediaType]!.schema ?? {},
        ...(rb.description ? { description: rb.description } : {}),
      };
    else if (rb.required)
      throw new Error(
        `${where}: operation '${op.operationId}' takes a ${Object.keys(rb.content).join(' or ')} body; only JSON request bodies are supported`,
      );
  }
  return info;
}

/** Swagger Parser lists every problem, one a line: the first few say what is wrong. */
const firstLines = (m: string) => m.split('\n').slice(0, 6).join(' ').slice(0, 1000);
