/** A URL as the WHATWG parser reads it (what fetch, node:http and the SDKs connect to), or null when it is not http(s). */
export function parseHttpUrl(raw: string): URL | null {
  const u = URL.parse(raw);
  return u && (u.protocol === 'http:' || u.protocol === 'https:') ? u : null;
}

const trimSlash = (p: string) => p.replace(/\/+$/, '');

/**
 * URL prefixes an operator listed (AGENTLOOP_MODEL_BASE_URLS, AGENTLOOP_WEBHOOK_ALLOWED_URLS). A URL is compared
 * after parsing — scheme, host and port exactly, the path on a segment boundary — so spellings like
 * `https://allowed@evil`, `https://allowed.evil` or `https://allowed/v1/../../evil` cannot pass.
 */
export class UrlPrefixes {
  private readonly prefixes: Array<{ origin: string; path: string }>;

  /** `variable`: where the prefixes come from, for the message of a bad one. */
  constructor(raws: readonly string[], variable: string) {
    this.prefixes = raws.map((raw) => {
      const u = parseHttpUrl(raw);
      if (!u || u.username || u.password || u.search || u.hash)
        throw new Error(`${variable}: '${raw}' is not an http(s) URL prefix without credentials, query or fragment`);
      return { origin: u.origin, path: trimSlash(u.pathname) };
    });
  }

  /** Whether the parsed URL `u` starts with one of the prefixes (its query and fragment are not compared). */
  matches(u: URL): boolean {
    const path = trimSlash(u.pathname);
    return this.prefixes.some(
      (p) => p.origin === u.origin && (p.path === '' || path === p.path || path.startsWith(`${p.path}/`)),
    );
  }
}
