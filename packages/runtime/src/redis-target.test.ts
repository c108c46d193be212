import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { prefixProblem, keyPrefix, redisTargetFromEnv, targetEndpoint, urlAuth } from './redis-target.js';

const URL_ = 'redis://127.0.0.1:6379';

describe('where Redis is (REDIS_CLUSTER_NODES, REDIS_SENTINELS, REDIS_URL)', () => {
  it('REDIS_URL alone; Sentinel with its master name; a cluster through its seed nodes', () => {
    expect(redisTargetFromEnv({}, URL_)).toEqual({ kind: 'url', url: URL_ });
    expect(redisTargetFromEnv({ REDIS_SENTINELS: 's1:26379, [::1]:26380', REDIS_SENTINEL_NAME: 'main' }, URL_)).toEqual(
      {
        kind: 'sentinel',
        name: 'main',
        url: URL_,
        sentinels: [
          { host: 's1', port: 26379 },
          { host: '::1', port: 26380 },
        ],
      },
    );
    expect(redisTargetFromEnv({ REDIS_CLUSTER_NODES: 'r1:7000,r2:7001' }, URL_)).toEqual({
      kind: 'cluster',
      url: URL_,
      nodes: [
        { host: 'r1', port: 7000 },
        { host: 'r2', port: 7001 },
      ],
    });
  });

  it('a Sentinel setting without its pair, both modes at once, or an entry that is not host:port stops the process naming it', () => {
    expect(() => redisTargetFromEnv({ REDIS_SENTINELS: 's1:26379' }, URL_)).toThrow(
      /REDIS_SENTINELS is set without REDIS_SENTINEL_NAME/,
    );
    expect(() => redisTargetFromEnv({ REDIS_SENTINEL_NAME: 'main' }, URL_)).toThrow(
      /REDIS_SENTINEL_NAME is set without REDIS_SENTINELS/,
    );
    expect(() =>
      redisTargetFromEnv(
        { REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: 'r1:7000' },
        URL_,
      ),
    ).toThrow(/both set/);
    for (const bad of ['s1', 's1:', 's1:0', 's1:70000', 'redis://s1:6379', 's 1:6379'])
      expect(
        () => redisTargetFromEnv({ REDIS_SENTINELS: `ok:26379,${bad}`, REDIS_SENTINEL_NAME: 'm' }, URL_),
        bad,
      ).toThrow(/REDIS_SENTINELS: '.*' is not host:port/);
  });

  it('Sentinel now starts a process (config): its target, with the credentials and database of REDIS_URL', () => {
    const c = loadConfig({
      REDIS_SENTINELS: '127.0.0.1:26379',
      REDIS_SENTINEL_NAME: 'main',
      REDIS_URL: 'redis://u:p%40ss@ignored:1/2',
    });
    expect(c.redis).toMatchObject({ kind: 'sentinel', name: 'main' });
    expect(urlAuth(c.redis.url)).toEqual({ username: 'u', password: 'p@ss', db: 2 });
    expect(targetEndpoint(c.redis)).toBe('sentinel main@127.0.0.1:26379'); // no credentials in logs
    expect(urlAuth('rediss://h:6380')).toEqual({ tls: {} });
  });

  it("a cluster's queues live under a hash tag derived from the plain prefix; a braced prefix is refused in cluster mode only", () => {
    const cluster = redisTargetFromEnv({ REDIS_CLUSTER_NODES: 'r1:7000' }, URL_);
    expect(keyPrefix('agentloop', cluster)).toBe('{agentloop}');
    expect(keyPrefix('agentloop', { kind: 'url', url: URL_ })).toBe('agentloop');
    expect(prefixProblem('agentloop', cluster)).toBeNull();
    expect(prefixProblem('{agentloop}', cluster)).toMatch(
      /AGENTLOOP_PREFIX '\{agentloop\}' contains '\{' or '\}'.*set AGENTLOOP_PREFIX=agentloop/,
    );
    expect(prefixProblem('ag}x', cluster)).toMatch(/contains/);
    expect(prefixProblem('{agentloop}', { kind: 'url', url: URL_ })).toBeNull();
  });
});
