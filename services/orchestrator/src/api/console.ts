import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import express, { type NextFunction, type Request, type Response } from 'express';

/** Where the web console is served (docs/API.md, Console). */
export const CONSOLE_PATH = '/console';

/**
 * The console's Content-Security-Policy: its own scripts, styles and API only. No inline script or style, no eval, no
 * frame may embed it, no form posts anywhere (sign-in is handled by script, and the key never enters a URL).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface ConsoleOptions {
  /** The built console (index.html and assets/) [the @agentloop/console package's dist/]; null: not installed. */
  dir?: string | null;
  /** AGENTLOOP_CONSOLE_TRACE_URL: a trace UI's URL with `{traceId}` in it, or null (trace ids are shown unlinked). */
  traceUrl?: string | null;
}

/** The dist/ directory of the installed @agentloop/console package, or null when it is not installed. */
export function defaultConsoleDir(): string | null {
  try {
    return path.join(path.dirname(createRequire(import.meta.url).resolve('@agentloop/console/package.json')), 'dist');
  } catch {
    return null;
  }
}

function securityHeaders(res: Response): void {
  res.set({
    'content-security-policy': CONSOLE_CSP,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  });
}

const plain = (res: Response, status: number, text: string) =>
  void res.status(status).type('text/plain; charset=utf-8').set('cache-control', 'no-store').send(`${text}\n`);

/**
 * `/console`: the static single-page app the workspace build produces (packages/console), with strict security
 * headers, and `/console/config.json` (what the api tells it). A missing build is a 503 that says how to make one.
 */
export function consoleRouter(opts: ConsoleOptions = {}): express.Router {
  const dir = opts.dir === undefined ? defaultConsoleDir() : opts.dir;
  const router = express.Router({ strict: true });
  const assets = dir
    ? express.static(dir, { index: false, redirect: false, dotfiles: 'deny', immutable: true, maxAge: '365d' })
    : null;
  const index = dir ? path.join(dir, 'index.html') : null;

  router.use((req: Request, res: Response, next: NextFunction) => {
    securityHeaders(res);
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return plain(res.set('allow', 'GET, HEAD'), 405, 'the console is read-only: GET or HEAD');
    next();
  });
  router.get(
    '/config.json',
    (_req, res) => void res.set('cache-control', 'no-store').json({ traceUrl: opts.traceUrl ?? null }),
  );
  router.use((req, res) => {
    if (!index || !fs.existsSync(index))
      return plain(
        res,
        503,
        `the web console is not built on this server (${index ?? '@agentloop/console is not installed'} is missing): run \`pnpm build\` in the workspace, which builds packages/console`,
      );
    // the app's URLs are relative to /console/: send /console there
    if (req.originalUrl.split('?')[0] === CONSOLE_PATH) return void res.redirect(301, `${CONSOLE_PATH}/`);
    // relative to its root: a path with a dot directory in it (node_modules/.pnpm in the image) is refused otherwise
    if (req.path === '/' || req.path === '/index.html')
      return void res.set('cache-control', 'no-cache').sendFile('index.html', { root: dir! });
    if (req.path.startsWith('/assets/'))
      return assets!(req, res, () => plain(res, 404, `no such console asset: ${req.path.slice(0, 200)}`));
    plain(
      res,
      404,
      `no such console page: ${req.path.slice(0, 200)} (the console's screens are at ${CONSOLE_PATH}/#/runs and ${CONSOLE_PATH}/#/inbox)`,
    );
  });
  return router;
}
