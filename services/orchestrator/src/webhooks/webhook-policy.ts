import { UrlPrefixes, parseHttpUrl, type RunRequest } from '@agentloop/protocol';
import { resolveGuarded, type Config, type GuardOptions, type ResolvedAddress } from '@agentloop/runtime';

/** How long resolving a webhook's host may take, at intake and at each attempt. */
const RESOLVE_TIMEOUT_MS = 5_000;

/** `transient`: the name did not resolve (now): a delivery tries again later; anything else refuses the URL. */
export type WebhookTarget =
  { ok: true; url: URL; target: ResolvedAddress } | { ok: false; message: string; transient?: boolean };

/**
 * Who may use webhooks and where they may go (SPEC §2): a tenant needs a signing secret (AGENTLOOP_WEBHOOK_SECRETS),
 * and a URL must be http(s) and resolve only to public addresses unless it starts with an
 * AGENTLOOP_WEBHOOK_ALLOWED_URLS prefix. Checked at intake and again at every attempt, which connects to the address
 * it checked (a name that resolves elsewhere by then cannot reach a refused address).
 */
export class WebhookPolicy {
  private readonly allowed: UrlPrefixes;

  constructor(
    readonly settings: Config['webhooks'],
    /** Tests stand in for DNS here. */
    private readonly resolve?: GuardOptions['resolve'],
  ) {
    this.allowed = new UrlPrefixes(settings.allowedUrls, 'AGENTLOOP_WEBHOOK_ALLOWED_URLS');
  }

  secretOf(tenant: string): Buffer | null {
    return this.settings.secrets.get(tenant) ?? null;
  }

  /** Where a delivery to `rawUrl` connects (the checked address), or why it may not go there. */
  async target(rawUrl: string): Promise<WebhookTarget> {
    const url = parseHttpUrl(rawUrl);
    if (!url) return { ok: false, message: 'refused: only http and https URLs are allowed' };
    const anyAddress = this.allowed.matches(url);
    const timeout = new Promise<WebhookTarget>((r) =>
      setTimeout(
        () =>
          r({
            ok: false,
            message: `cannot resolve host '${url.hostname}' within ${RESOLVE_TIMEOUT_MS} ms`,
            transient: true,
          }),
        RESOLVE_TIMEOUT_MS,
      ).unref(),
    );
    const guard = resolveGuarded(url.hostname, {
      resolve: this.resolve,
      allowAddress: anyAddress ? () => true : undefined,
    }).then((g): WebhookTarget => {
      if (g.ok) return { ok: true, url, target: g.target };
      if (g.reason === 'blocked')
        return { ok: false, message: `${g.message}, and the URL starts with no AGENTLOOP_WEBHOOK_ALLOWED_URLS prefix` };
      return { ok: false, message: g.message, transient: g.reason === 'unresolvable' };
    });
    return Promise.race([guard, timeout]);
  }

  /** Why a request's `notify` cannot be accepted from `tenant` (400 issues, the field's path in each). */
  async issues(
    notify: RunRequest['notify'],
    tenant: string,
  ): Promise<Array<{ path: string[]; code: string; message: string }>> {
    if (!notify) return [];
    if (!this.secretOf(tenant))
      return [
        {
          path: ['notify'],
          code: 'not_allowed',
          message: `tenant ${tenant} has no webhook signing secret (AGENTLOOP_WEBHOOK_SECRETS): it cannot use notify`,
        },
      ];
    const t = await this.target(notify.url);
    return t.ok ? [] : [{ path: ['notify', 'url'], code: 'not_allowed', message: t.message }];
  }
}
