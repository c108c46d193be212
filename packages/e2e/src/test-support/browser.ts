import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO_ROOT } from '@agentloop/testing';

/** Debian's Chromium (CHROMIUM_PATH overrides): playwright-core drives it, no browser is downloaded. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

const aptGet = (...args: string[]) =>
  execFileSync('apt-get', args, {
    stdio: 'ignore',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeout: 600_000,
  });

/**
 * Makes sure Chromium is there: installs Debian's `chromium` package when it is missing and this process may (root,
 * apt-get present). Returns why the browser tests must be skipped, or null when they can run.
 */
export function ensureChromium(): string | null {
  if (fs.existsSync(CHROMIUM)) return null;
  if (process.env.CHROMIUM_PATH) return `CHROMIUM_PATH=${CHROMIUM} does not exist`;
  if (process.getuid?.() !== 0)
    return `${CHROMIUM} is missing and this user is not root: install it with \`apt-get install -y chromium\``;
  try {
    try {
      aptGet('install', '-y', '--no-install-recommends', 'chromium');
    } catch {
      aptGet('update'); // a machine whose package lists were never fetched
      aptGet('install', '-y', '--no-install-recommends', 'chromium');
    }
  } catch (e) {
    return `${CHROMIUM} is missing and \`apt-get install -y chromium\` failed: ${(e as Error).message.split('\n')[0]}`;
  }
  return fs.existsSync(CHROMIUM) ? null : `apt-get installed chromium but ${CHROMIUM} is still missing`;
}

export const launchChromium = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });

/** docs/console/<name>.png, written only when CONSOLE_SCREENSHOTS=1 (so a test run leaves the tree clean). */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.CONSOLE_SCREENSHOTS !== '1') return;
  const dir = path.join(REPO_ROOT, 'docs/console');
  fs.mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true, animations: 'disabled' });
}
