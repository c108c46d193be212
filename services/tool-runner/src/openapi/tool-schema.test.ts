import { describe, expect, it } from 'vitest';
import type { OperationInfo } from './document.js';
import { jsonSchemaOf, sideEffectOf, toolSchema } from './tool-schema.js';

describe('an operation as a tool', () => {
  it('SPEC §6 side effects: GET read, every other method external, the entry overriding; retry safe for idempotent methods', () => {
    expect(sideEffectOf('GET', undefined)).toEqual({ sideEffect: 'read', retry: 'safe' });
    for (const m of ['HEAD', 'PUT', 'DELETE'])
      expect(sideEffectOf(m, undefined), m).toEqual({ sideEffect: 'external', retry: 'safe' });
    for (const m of ['POST', 'PATCH'])
      expect(sideEffectOf(m, undefined), m).toEqual({ sideEffect: 'external', retry: 'never' });
    expect(sideEffectOf('POST', 'read')).toEqual({ sideEffect: 'read', retry: 'safe' }); // a search by POST
    expect(sideEffectOf('GET', 'critical')).toEqual({ sideEffect: 'critical', retry: 'safe' });
  });

  it('parameters sharing a name, or one called body, are prefixed with their location; the entry’s headers are not offered', () => {
    const op: OperationInfo = {
      operationId: 'x',
      method: 'POST',
      path: '/a/{id}',
      parameters: [
        { name: 'id', in: 'path', required: true, schema: { type: 'string' }, json: false },
        { name: 'id', in: 'query', required: false, schema: { type: 'integer' }, json: false },
        { name: 'body', in: 'query', required: false, schema: {}, json: false },
        { name: 'X-Api-Key', in: 'header', required: true, schema: {}, json: false },
        { name: 'Host', in: 'header', required: false, schema: {}, json: false },
      ],
      body: { required: false, mediaType: 'application/json', schema: { type: 'object' } },
    };
    const { parameters, plan } = toolSchema(op, { 'x-api-key': '${env:K}' });
    expect(Object.keys(parameters.properties as object)).toEqual(['path_id', 'query_id', 'query_body', 'body']);
    expect(parameters.required).toEqual(['path_id']);
    expect(plan.params.map((p) => p.property)).toEqual(['path_id', 'query_id', 'query_body']);
  });

  it('OpenAPI schemas as JSON Schema: nullable mapped, documentation keywords dropped, a circular $ref left open', () => {
    expect(
      jsonSchemaOf({
        type: 'object',
        example: { a: 1 },
        properties: {
          a: { type: 'string', nullable: true, xml: { name: 'a' } },
          self: { $ref: '#/components/schemas/Node' },
        },
        items: { anyOf: [{ type: 'integer', nullable: true }] },
      }),
    ).toEqual({
      type: 'object',
      properties: { a: { type: ['string', 'null'] }, self: { description: '(recursive: Node)' } },
      items: { anyOf: [{ type: ['integer', 'null'] }] },
    });
  });
});
