import { describe, expect, it } from 'vitest';
import { buildRequest } from './build-request.js';
import type { ParameterInfo } from './document.js';
import type { ArgumentPlan } from './tool-schema.js';

const param = (name: string, where: ParameterInfo['in'], extra: Partial<ParameterInfo> = {}) => ({
  name,
  in: where,
  required: where === 'path',
  schema: {},
  json: false,
  property: name,
  ...extra,
});
const plan: ArgumentPlan = {
  params: [
    param('id', 'path'),
    param('tag', 'query'),
    param('filter', 'query', { style: 'deepObject' }),
    param('X-Trace', 'header'),
    param('session', 'cookie'),
  ],
  body: { property: 'body', mediaType: 'application/json' },
};
const build = (args: Record<string, unknown>) =>
  buildRequest('https://crm.internal/api/', '/customers/{id}/notes', plan, args);
const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return 'no error';
};

describe('an operation call as a request', () => {
  it('path, query (exploded arrays, deepObject), header, cookie and JSON body', () => {
    expect(
      build({
        id: 'c 1',
        tag: ['a', 'b&c'],
        filter: { city: 'Oslo' },
        'X-Trace': 't-1',
        session: 's=1',
        body: { text: 'hi' },
      }),
    ).toEqual({
      url: 'https://crm.internal/api/customers/c%201/notes?tag=a&tag=b%26c&filter%5Bcity%5D=Oslo',
      headers: { 'X-Trace': 't-1', cookie: 'session=s%3D1', 'content-type': 'application/json' },
      body: '{"text":"hi"}',
    });
  });

  it('a path parameter stays one segment under the base path: traversal encoded, dot segments and empty values refused', () => {
    expect(build({ id: '../../admin' }).url).toBe('https://crm.internal/api/customers/..%2F..%2Fadmin/notes');
    expect(build({ id: '..\\admin?x=1#f' }).url).toBe(
      'https://crm.internal/api/customers/..%5Cadmin%3Fx%3D1%23f/notes',
    );
    for (const id of ['..', '.', ''])
      expect(
        code(() => build({ id })),
        id,
      ).toBe('invalid_arguments');
    expect(build({ id: '%2e%2e' }).url).toBe('https://crm.internal/api/customers/%252e%252e/notes');
  });

  it('a header value with a line break is refused, not sent', () => {
    expect(code(() => build({ id: 'c', 'X-Trace': 'a\r\nX-Admin: 1' }))).toBe('invalid_arguments');
  });
});
