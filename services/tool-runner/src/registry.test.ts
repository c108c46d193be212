import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ToolRegistry } from './registry.js';

/** A tool module on disk, as AGENTLOOP_TOOL_MODULES names it. */
const moduleOf = (source: string): string => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tools-')), 'tools.mjs');
  fs.writeFileSync(file, source);
  return file;
};

describe('ToolRegistry: local tools (SPEC §6)', () => {
  it('built-ins listed in AGENTLOOP_LOCAL_TOOLS move to pool "local" (5 s at most); a role takes its share with only()', async () => {
    const reg = await ToolRegistry.withModules([], ['calculator', 'sleep']);
    expect(reg.get('calculator')!.entry).toMatchObject({ pool: 'local', timeoutMs: 5000 });
    expect(reg.get('http_get')!.entry.pool).toBe('default');
    expect(
      reg
        .only((p) => p === 'local')
        .all()
        .map((t) => t.entry.name)
        .sort(),
    ).toEqual(['calculator', 'sleep']);
    expect(reg.only((p) => p !== 'local').get('calculator')).toBeUndefined();
  });

  it('refuses at start: a name that is no built-in, a local tool over 5 s, a tool defined twice', async () => {
    await expect(ToolRegistry.withModules([], ['calculatr'])).rejects.toThrow(
      /AGENTLOOP_LOCAL_TOOLS: 'calculatr' is not a built-in tool/,
    );
    const slow = moduleOf(
      `export default [{ name: 'slow_local', parameters: { type: 'object' }, sideEffect: 'read', pool: 'local', timeoutMs: 6000, execute() { return 1; } }];`,
    );
    await expect(ToolRegistry.withModules([slow])).rejects.toThrow(
      /slow_local: a local tool's timeoutMs is at most 5000/,
    );
    const twice = moduleOf(
      `export default [{ name: 'calculator', parameters: { type: 'object' }, sideEffect: 'read', execute() { return 1; } }];`,
    );
    await expect(ToolRegistry.withModules([twice], ['calculator'])).rejects.toThrow(/calculator is defined twice/);
    await expect(ToolRegistry.withModules([twice])).rejects.toThrow(/calculator is defined twice/);
  });

  it('a local tool without a timeout gets 5 s', async () => {
    const m = moduleOf(
      `export default [{ name: 'quick', parameters: { type: 'object' }, sideEffect: 'read', pool: 'local', execute() { return 1; } }];`,
    );
    expect((await ToolRegistry.withModules([m])).get('quick')!.entry).toMatchObject({ pool: 'local', timeoutMs: 5000 });
  });
});
