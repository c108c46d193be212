import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@agentloop/testing';

const exec = promisify(execFile);

/**
 * A page's words, sorted: what the reference says, whatever order TypeScript prints a union's members in (that order
 * follows the order types were created in, which differs between a clean build and an incremental one).
 */
const tokens = (text: string): string[] => (text.match(/"[^"]*"|[\w@./-]+/g) ?? []).sort();

describe('the client reference (docs/client)', () => {
  it('is what `pnpm docs:client` generates from the client source today', async () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'agentloop-client-docs-'));
    try {
      await exec(
        process.execPath,
        [
          path.join(REPO_ROOT, 'node_modules/typedoc/bin/typedoc'),
          '--options',
          'packages/client/typedoc.json',
          '--out',
          out,
        ],
        { cwd: REPO_ROOT },
      );
      const committed = path.join(REPO_ROOT, 'docs/client');
      expect(fs.readdirSync(committed).sort(), 'run `pnpm docs:client`').toEqual(fs.readdirSync(out).sort());
      for (const f of fs.readdirSync(out))
        expect(
          tokens(fs.readFileSync(path.join(committed, f), 'utf8')),
          `docs/client/${f} is stale: run \`pnpm docs:client\``,
        ).toEqual(tokens(fs.readFileSync(path.join(out, f), 'utf8')));
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);
});
