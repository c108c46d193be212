import { UrlPrefixes, parseHttpUrl, type ModelSpec } from '@agentloop/protocol';

/** A problem with one field of a model spec, for a 400 (`path` is relative to the spec). */
export interface EndpointIssue {
  path: string[];
  message: string;
}

/**
 * Which model endpoints and credentials a request may name (SPEC §2 Providers): only what the operator listed in
 * AGENTLOOP_MODEL_BASE_URLS and AGENTLOOP_MODEL_KEY_ENVS. A base URL is compared after URL parsing — scheme, host
 * and port exactly, the path on a segment boundary — so spellings like `https://allowed@evil`, `https://allowed.evil`
 * or `https://allowed/v1/../../evil` cannot pass, and the URL the SDK is given is the parsed one that was checked.
 */
export class EndpointPolicy {
  private readonly prefixes: UrlPrefixes;
  private readonly keyEnvs: Set<string>;

  constructor(baseUrls: readonly string[] = [], keyEnvs: readonly string[] = []) {
    this.prefixes = new UrlPrefixes(baseUrls, 'AGENTLOOP_MODEL_BASE_URLS');
    this.keyEnvs = new Set(keyEnvs);
  }

  /** The base URL to use (normalized), or null when the operator did not allow it. */
  allowedBaseUrl(raw: string): string | null {
    const u = parseHttpUrl(raw);
    if (!u || u.username || u.password || u.search || u.hash) return null;
    return this.prefixes.matches(u) ? `${u.origin}${u.pathname.replace(/\/+$/, '')}` : null;
  }

  keyEnvAllowed(name: string): boolean {
    return this.keyEnvs.has(name);
  }

  /** Every field of one model spec that names an endpoint or a credential the operator did not allow. */
  issues(spec: Pick<ModelSpec, 'baseUrl' | 'apiKeyEnv'>): EndpointIssue[] {
    const out: EndpointIssue[] = [];
    if (spec.baseUrl !== undefined && this.allowedBaseUrl(spec.baseUrl) === null)
      out.push({
        path: ['baseUrl'],
        message:
          'this base URL is not allowed: it must start with one of the prefixes the operator listed in AGENTLOOP_MODEL_BASE_URLS',
      });
    if (spec.apiKeyEnv !== undefined && !this.keyEnvAllowed(spec.apiKeyEnv))
      out.push({
        path: ['apiKeyEnv'],
        message:
          'this environment variable is not allowed: it must be listed by the operator in AGENTLOOP_MODEL_KEY_ENVS',
      });
    return out;
  }
}
