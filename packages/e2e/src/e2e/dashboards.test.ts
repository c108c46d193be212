import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, demoAgentScript } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';

const dashboard = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'deploy/grafana/agentloop.json'), 'utf8'));
const alertsText = fs.readFileSync(path.join(REPO_ROOT, 'deploy/prometheus/alerts.yml'), 'utf8');
const dashboardExprs: string[] = dashboard.panels.flatMap((p: { targets: Array<{ expr: string }> }) =>
  p.targets.map((t) => t.expr),
);
const alertExprs = [...alertsText.matchAll(/^\s+expr: (.+)$/gm)].map((m) => m[1]!);
/** promtool from PATH, or from Debian's prometheus package unpacked into .tools/ (no service installed or started). */
function findPromtool(): string | null {
  const local = path.join(REPO_ROOT, '.tools/prometheus/usr/bin/promtool');
  try {
    return execFileSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).trim() || null;
  } catch {}
  if (fs.existsSync(local)) return local;
  try {
    const dir = path.join(REPO_ROOT, '.tools');
    fs.mkdirSync(dir, { recursive: true });
    execFileSync(
      'sh',
      [
        '-c',
        'apt-get download prometheus >/dev/null 2>&1 && dpkg-deb -x prometheus_*.deb prometheus && rm -f prometheus_*.deb',
      ],
      { cwd: dir, timeout: 90_000 },
    );
    return fs.existsSync(local) ? local : null;
  } catch {
    return null;
  }
}

const metricNames = (expr: string) =>
  [...expr.matchAll(/\bagentloop_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ''));

describe('dashboard and alerts name only metrics a live process exports', () => {
  let s: InProcessStack;
  let families: Set<string>;
  beforeAll(async () => {
    s = await InProcessStack.start({ script: demoAgentScript() });
    const id = await s.a.startRun({
      input: 'go',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['calculator', 'current_time'],
    });
    await s.a.waitTerminal(id);
    const text = (await s.anon.request('GET', '/metrics')).text;
    families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('exports every metric of SPEC §7', () => {
    for (const name of [
      'agentloop_runs_started_total',
      'agentloop_runs_finished_total',
      'agentloop_loop_iterations_total',
      'agentloop_iteration_overhead_seconds',
      'agentloop_llm_request_duration_seconds',
      'agentloop_llm_tokens_total',
      'agentloop_llm_fallbacks_total',
      'agentloop_tool_calls_total',
      'agentloop_tool_duration_seconds',
      'agentloop_tools_skipped_total',
      'agentloop_runs_paused_total',
      'agentloop_runs_parked',
      'agentloop_compressions_total',
      'agentloop_queue_jobs',
      'agentloop_webhook_deliveries_total',
    ])
      expect(families, name).toContain(name);
  });

  it('the dashboard covers what operators watch and names only exported metrics', () => {
    expect(dashboardExprs.length).toBeGreaterThanOrEqual(15);
    const used = new Set(dashboardExprs.flatMap(metricNames));
    for (const name of used) expect(families, `dashboard uses ${name}`).toContain(name);
    for (const needed of [
      'agentloop_loop_iterations_total',
      'agentloop_tools_skipped_total',
      'agentloop_queue_jobs',
      'agentloop_runs_parked',
      'agentloop_compressions_total',
    ])
      expect(used).toContain(needed);
  });

  it('the dashboard links a run id to its trace, and its latency panels show exemplars (SPEC §8)', () => {
    expect(dashboard.templating.list.map((v: { name: string }) => v.name)).toContain('run_id');
    const trace = (dashboard.links as Array<{ url: string }>).find((l) => l.url.includes('agentloop.run.id'));
    expect(decodeURIComponent(trace!.url)).toContain('tags={"agentloop.run.id":"${run_id}"}');
    const exemplars = dashboard.panels
      .filter((p: { targets: Array<{ exemplar?: boolean }> }) => p.targets.some((t) => t.exemplar))
      .flatMap((p: { targets: Array<{ expr: string }> }) => p.targets.map((t) => t.expr));
    expect(exemplars.join(' ')).toMatch(/agentloop_iteration_overhead_seconds_bucket/);
    expect(exemplars.join(' ')).toMatch(/agentloop_llm_request_duration_seconds_bucket/);
  });

  it('every alert names only exported metrics (and passes promtool where Debian’s prometheus is installed)', () => {
    expect(alertExprs).toHaveLength(6);
    for (const name of new Set(alertExprs.flatMap(metricNames))) expect(families, `alert uses ${name}`).toContain(name);
    const promtool = findPromtool();
    if (promtool) {
      const out = execFileSync(promtool, ['check', 'rules', path.join(REPO_ROOT, 'deploy/prometheus/alerts.yml')], {
        encoding: 'utf8',
      });
      expect(out).toContain('SUCCESS: 6 rules found');
      execFileSync(
        promtool,
        ['check', 'config', '--syntax-only', path.join(REPO_ROOT, 'deploy/prometheus/prometheus.yml')],
        { encoding: 'utf8' },
      );
    } else console.warn('promtool unavailable (no PATH entry, no apt-get): alerts checked by metric names only');
  }, 120_000);
});
