import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../registry.js';
import { catalogName, contentText, inputSchemaOf, sideEffectOf, toolResultOf } from './tool-mapping.js';

describe('MCP tools in the catalog', () => {
  it('<server>__<tool>, characters outside the pattern replaced; too long or colliding: cut with a stable hash suffix', () => {
    expect(catalogName('fs', 'read.file', new Set())).toBe('fs__read_file');
    const taken = new Set(['fs__read_file']);
    const other = catalogName('fs', 'read/file', taken);
    expect(other).toMatch(/^fs__read_file_[0-9a-f]{8}$/);
    expect(catalogName('fs', 'read/file', taken)).toBe(other);
    const long = catalogName('server', 'x'.repeat(80), new Set());
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^server__x+_[0-9a-f]{8}$/);
  });

  it('trust: untrusted is external and never retried whatever it claims; trusted follows the annotations with MCP defaults', () => {
    expect(sideEffectOf('untrusted', { readOnlyHint: true, idempotentHint: true })).toEqual({
      sideEffect: 'external',
      retry: 'never',
    });
    expect(sideEffectOf('trusted', { readOnlyHint: true })).toEqual({ sideEffect: 'read', retry: 'safe' });
    expect(sideEffectOf('trusted', { destructiveHint: false })).toEqual({ sideEffect: 'reversible', retry: 'never' });
    expect(sideEffectOf('trusted', { destructiveHint: false, idempotentHint: true })).toEqual({
      sideEffect: 'reversible',
      retry: 'safe',
    });
    expect(sideEffectOf('trusted', {})).toEqual({ sideEffect: 'external', retry: 'never' });
    expect(sideEffectOf('trusted', undefined)).toEqual({ sideEffect: 'external', retry: 'never' });
    expect(sideEffectOf('trusted', { idempotentHint: true })).toEqual({ sideEffect: 'external', retry: 'safe' });
  });

  it('draft-07 and 2020-12 input schemas both compile in the registry and validate', () => {
    const reg = new ToolRegistry([]);
    for (const [name, $schema] of [
      ['d7', 'http://json-schema.org/draft-07/schema#'],
      ['d2020', 'https://json-schema.org/draft/2020-12/schema'],
    ] as const)
      reg.add({
        name,
        sideEffect: 'read',
        parameters: inputSchemaOf({ $schema, type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }),
        execute: () => null,
      });
    expect(reg.get('d2020')!.validate({ n: 1 }).ok).toBe(true);
    expect(reg.get('d2020')!.validate({}).ok).toBe(false);
    expect(reg.get('d7')!.validate({ n: 'x' }).ok).toBe(false);
  });

  it('results: structuredContent, else text parts joined; images, audio and resources as placeholders, never base64', () => {
    expect(toolResultOf({ structuredContent: { sum: 3 }, content: [{ type: 'text', text: '3' }] })).toEqual({ sum: 3 });
    const b64 = Buffer.alloc(100, 1).toString('base64');
    const text = contentText([
      { type: 'text', text: 'a' },
      { type: 'image', data: b64, mimeType: 'image/png' },
      { type: 'audio', data: b64, mimeType: 'audio/wav' },
      { type: 'resource', resource: { uri: 'file:///x', blob: b64, mimeType: 'application/gzip' } },
      { type: 'resource_link', uri: 'file:///y', name: 'y' },
      { type: 'text', text: 'b' },
    ]);
    expect(text).toBe(
      'a\n[image image/png, 100 bytes]\n[audio audio/wav, 100 bytes]\n[resource file:///x application/gzip, 100 bytes]\n[resource link file:///y]\nb',
    );
    expect(text).not.toContain(b64);
  });
});
