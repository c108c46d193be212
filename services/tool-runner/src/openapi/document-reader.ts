import { isPrivateAddress } from '@agentloop/runtime';
import { guardedRequest } from '../guarded-request.js';

/** A document (or a file one of its `$ref`s names) larger than this stops the start. */
export const MAX_DOCUMENT_BYTES = 10_000_000;
const READ_TIMEOUT_MS = 30_000;

/**
 * Swagger Parser's `resolve.http` reader (json-schema-ref-parser's resolver API), replacing the library's own: every
 * http(s) document it reads — the spec, its `$ref`s', each redirect — goes through the product's SSRF guard
 * (`guardedRequest`: every address checked, the checked one connected to). `allowPrivate` lets the spec URL's own
 * origin (scheme, host, port) resolve to a private or loopback address, never a link-local or metadata one, and no
 * other origin; a spec from a file gets no allowance for its `$ref`s.
 */
export function guardedDocumentReader(spec: string, allowPrivate: boolean) {
  const origin = /^https?:\/\//i.test(spec) ? URL.parse(spec)?.origin : undefined;
  return {
    canRead: (file: { url: string }) => /^https?:\/\//i.test(file.url),
    read: async (file: { url: string }): Promise<string> => {
      const res = await guardedRequest(file.url, AbortSignal.timeout(READ_TIMEOUT_MS), {
        headers: () => ({
          'user-agent': 'agentloop-openapi/1',
          accept: 'application/json, application/yaml, text/yaml, */*;q=0.8',
        }),
        maxBytes: MAX_DOCUMENT_BYTES,
        allowAddress: (address, url) =>
          allowPrivate && origin !== undefined && url.origin === origin && isPrivateAddress(address),
      }).catch((e: Error) => {
        throw new Error(
          `${file.url}: ${e.name === 'TimeoutError' ? `no answer within ${READ_TIMEOUT_MS / 1000} s` : e.message}`,
        );
      });
      if (res.truncated) throw new Error(`${file.url}: over ${MAX_DOCUMENT_BYTES} bytes`);
      if (res.status < 200 || res.status >= 300) throw new Error(`${file.url}: HTTP ${res.status}`);
      return res.body;
    },
  };
}
