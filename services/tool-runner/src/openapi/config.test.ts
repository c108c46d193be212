import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseOpenApiTools, resolveHeaders } from './config.js';

const entry = {
  name: 'crm',
  spec: '/specs/crm.yaml',
  baseUrl: 'https://crm.internal/api',
  operations: ['getCustomer'],
};

describe('AGENTLOOP_OPENAPI_TOOLS', () => {
  it('a JSON array, with the defaults of SPEC §6', () => {
    expect(parseOpenApiTools(JSON.stringify([entry]))).toEqual([
      { ...entry, headers: {}, sideEffects: {}, pool: 'default', timeoutMs: 30_000, allowPrivate: false },
    ]);
    expect(parseOpenApiTools('')).toEqual([]);
  });

  it('or the path of a JSON file holding one', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'openapi-')), 'tools.json');
    writeFileSync(file, JSON.stringify([{ ...entry, pool: 'crm', allowPrivate: true }]));
    expect(parseOpenApiTools(file)).toMatchObject([{ name: 'crm', pool: 'crm', allowPrivate: true }]);
    expect(() => parseOpenApiTools('/nonexistent/tools.json')).toThrow(
      /AGENTLOOP_OPENAPI_TOOLS \(file \/nonexistent\/tools.json\): not a JSON array/,
    );
  });

  it('refuses what SPEC §6 does not allow, naming the entry and field', () => {
    const bad = (e: object) => () => parseOpenApiTools(JSON.stringify([{ ...entry, ...e }]));
    expect(bad({ name: 'c r m' })).toThrow(/\[0.name\] a name is 1 to 32/);
    expect(bad({ baseUrl: 'ftp://crm/api' })).toThrow(/\[0.baseUrl\]/);
    expect(bad({ baseUrl: 'https://user:pw@crm/api' })).toThrow(
      /\[0.baseUrl\] baseUrl is an http\(s\) URL without credentials/,
    );
    expect(bad({ operations: [] })).toThrow(/\[0.operations\] list the operationIds/);
    expect(bad({ operations: ['a', 'a'] })).toThrow(/\[0.operations\] lists an operation twice/);
    expect(bad({ sideEffects: { createNote: 'reversible' } })).toThrow(
      /\[0.sideEffects\] names an operation that is not in operations/,
    );
    expect(bad({ sideEffects: { getCustomer: 'harmless' } })).toThrow(/\[0.sideEffects.getCustomer\]/);
    expect(bad({ pool: 'local' })).toThrow(/\[0.pool\] OpenAPI tools are served by tool-runners/);
    expect(bad({ headers: { 'Bad Header': 'x' } })).toThrow(/\[0.headers\] a key is not a header name/);
    expect(bad({ allowPrivate: 'yes' })).toThrow(/\[0.allowPrivate\]/);
    expect(bad({ secret: 'sk-x' })).toThrow(/Unrecognized key/);
    expect(() => parseOpenApiTools(JSON.stringify([entry, entry]))).toThrow(/'crm' is used twice/);
  });

  it('${env:NAME} in headers: replaced; unset names reported (never values); the values kept as secrets to redact', () => {
    const [e] = parseOpenApiTools(
      JSON.stringify([
        { ...entry, headers: { Authorization: 'Bearer ${env:CRM_TOKEN}', 'X-Tenant': '${env:CRM_TENANT}' } },
      ]),
    );
    expect(resolveHeaders(e!, { CRM_TOKEN: 'tok-123456', CRM_TENANT: 'acme' })).toEqual({
      headers: { Authorization: 'Bearer tok-123456', 'X-Tenant': 'acme' },
      missing: [],
      secrets: ['tok-123456', 'acme'],
    });
    expect(resolveHeaders(e!, { CRM_TOKEN: 'tok-123456' }).missing).toEqual(['CRM_TENANT']);
  });
});
