import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@agentloop/testing';

/** The documents a user who clones the repository reads. */
const DOCS = [
  'README.md',
  ...fs
    .readdirSync(path.join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
const anchorsOf = (file: string) =>
  new Set([...fs.readFileSync(file, 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));

describe('the docs are complete inside the repository', () => {
  it.each(DOCS)('%s names nothing outside the repository, and each of its links resolves', (doc) => {
    const text = fs.readFileSync(path.join(REPO_ROOT, doc), 'utf8');
    expect(text).not.toMatch(/\.\.\/shared\b/);
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue; // http(s), mailto
      const [file, anchor] = target!.split('#') as [string, string | undefined];
      const resolved = file ? path.resolve(path.dirname(path.join(REPO_ROOT, doc)), file) : path.join(REPO_ROOT, doc);
      expect(resolved.startsWith(`${REPO_ROOT}${path.sep}`), `${doc}: ${target} leaves the repository`).toBe(true);
      expect(fs.existsSync(resolved), `${doc}: ${target} does not exist`).toBe(true);
      if (anchor) expect(anchorsOf(resolved).has(anchor), `${doc}: ${target} names no heading`).toBe(true);
    }
  });

  it('the README points at the API reference, which covers the API, events, run request, decisions, tools and configuration', () => {
    expect(fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8')).toContain('](docs/API.md)');
    const anchors = anchorsOf(path.join(REPO_ROOT, 'docs/API.md'));
    for (const a of [
      'configuration',
      '2-http-api-v1-json-role-api',
      'runrequest',
      '4-events',
      '5-pauses-decisions-and-resume',
      '6-tools',
    ])
      expect(anchors).toContain(a);
  });
});
