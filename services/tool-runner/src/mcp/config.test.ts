import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseMcpServers, resolveEnvRefs } from './config.js';

describe('AGENTLOOP_MCP_SERVERS', () => {
  it('a JSON array, with the defaults of SPEC §6', () => {
    const [s] = parseMcpServers('[{"name":"fs","command":"node","args":["s.js"]}]');
    expect(s).toEqual({
      name: 'fs',
      command: 'node',
      args: ['s.js'],
      env: {},
      headers: {},
      pool: 'default',
      trust: 'untrusted',
      denyTools: [],
      timeoutMs: 30_000,
    });
    expect(parseMcpServers('')).toEqual([]);
  });

  it('or the path of a JSON file holding one', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'mcp-')), 'servers.json');
    writeFileSync(
      file,
      JSON.stringify([{ name: 'search', url: 'https://mcp.example.com/mcp', trust: 'trusted', pool: 'mcp' }]),
    );
    expect(parseMcpServers(file)).toMatchObject([
      { name: 'search', url: 'https://mcp.example.com/mcp', trust: 'trusted', pool: 'mcp' },
    ]);
    expect(() => parseMcpServers('/nonexistent/servers.json')).toThrow(
      /AGENTLOOP_MCP_SERVERS \(file \/nonexistent\/servers.json\): not a JSON array/,
    );
  });

  it('refuses a server with both or neither of command and url, bad names, unknown keys and repeated names, naming the entry', () => {
    expect(() => parseMcpServers('[{"name":"a","command":"x","url":"https://h/mcp"}]')).toThrow(
      /\[0\] give exactly one of command \(stdio\) and url/,
    );
    expect(() => parseMcpServers('[{"name":"a"}]')).toThrow(/exactly one of command/);
    expect(() => parseMcpServers('[{"name":"a b","command":"x"}]')).toThrow(/\[0.name\] a server name is 1 to 32/);
    expect(() => parseMcpServers('[{"name":"a","command":"x","trust":"maybe"}]')).toThrow(/\[0.trust\]/);
    expect(() => parseMcpServers('[{"name":"a","command":"x","tools":[]}]')).toThrow(/Unrecognized key/);
    expect(() => parseMcpServers('[{"name":"a","url":"ftp://h"}]')).toThrow(/\[0.url\]/);
    expect(() => parseMcpServers('[{"name":"a","command":"x"},{"name":"a","command":"y"}]')).toThrow(
      /'a' is used twice/,
    );
    expect(() => parseMcpServers('{"name":"a"}')).toThrow(/\(root\)/);
  });

  it('${env:NAME} replaced in args, env and headers; the names of unset variables reported, never a value', () => {
    const [s] = parseMcpServers(
      '[{"name":"a","command":"x","args":["--t=${env:T}"],"env":{"K":"${env:T}-${env:U}"},"headers":{"Authorization":"Bearer ${env:MISSING}"}}]',
    );
    const { server, missing } = resolveEnvRefs(s!, { T: 'secret', U: 'u' });
    expect(server.args).toEqual(['--t=secret']);
    expect(server.env).toEqual({ K: 'secret-u' });
    expect(missing).toEqual(['MISSING']);
    expect(resolveEnvRefs(s!, { T: 't', U: 'u', MISSING: 'm' }).missing).toEqual([]);
  });
});
