import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The shared recorded wire fixtures (../shared/fixtures/recorded relative to the repository root). */
export const FIXTURES_DIR =
  process.env.AGENTLOOP_FIXTURES_DIR ??
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/recorded');

/** A recorded OpenAI-style stream as the SSE body the provider sent (chunk files get their framing back). */
export function openAIFixtureSse(relPath: string): string {
  const file = path.join(FIXTURES_DIR, relPath);
  const raw = fs.readFileSync(file, 'utf8');
  if (relPath.endsWith('.chunks.txt')) {
    const lines = raw.split('\n').filter((l) => l.trim() !== '');
    return lines.map((l) => `data: ${l}\n\n`).join('') + 'data: [DONE]\n\n';
  }
  return raw;
}

/** The parsed JSON chunks of a recorded OpenAI-style stream. */
export function openAIFixtureChunks(relPath: string): Array<Record<string, any>> {
  return openAIFixtureSse(relPath)
    .split('\n\n')
    .map((f) => f.replace(/^data: /, '').trim())
    .filter((d) => d && d !== '[DONE]')
    .map((d) => JSON.parse(d));
}

export function listFixtures(dir: string, suffixes: string[]): string[] {
  return fs
    .readdirSync(path.join(FIXTURES_DIR, dir))
    .filter((f) => suffixes.some((s) => f.endsWith(s)))
    .map((f) => `${dir}/${f}`);
}

/** A recorded Gemini stream as SSE (chunk files get their framing back; no [DONE] in Gemini's format). */
export function googleFixtureSse(relPath: string): string {
  const raw = fs.readFileSync(path.join(FIXTURES_DIR, relPath), 'utf8');
  if (raw.startsWith('data:')) return raw;
  return raw
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => `data: ${l}\r\n\r\n`)
    .join('');
}

export interface RecordedInteraction {
  /** The recorded request's JSON body. */
  request: Record<string, unknown>;
  /** The recorded response, one SSE event per body segment. */
  sse: string;
}

/** A js-genai replay recording (`interactions[]`): each request body with its response served as SSE. */
export function googleInteractions(relPath: string): RecordedInteraction[] {
  const rec = JSON.parse(fs.readFileSync(path.join(FIXTURES_DIR, relPath), 'utf8')) as {
    interactions: Array<{
      request: { bodySegments: Array<Record<string, unknown>> };
      response: { bodySegments: unknown[] };
    }>;
  };
  return rec.interactions.map((i) => ({
    request: i.request.bodySegments[0] ?? {},
    sse: i.response.bodySegments.map((s) => `data: ${JSON.stringify(s)}\r\n\r\n`).join(''),
  }));
}

/** Recorded OpenAI Responses API streams and bodies (packages/testing/fixtures/openai-responses, see its MANIFEST.md). */
export const RESPONSES_FIXTURES_DIR = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../fixtures/openai-responses',
);

export interface RecordedResponseStream {
  /** The events of one response, parsed, in order. */
  events: Array<Record<string, any>>;
  /** The same response as the SSE body the API sent (`event: <type>` and `data: <json>` per event). */
  sse: string;
}

/**
 * A recorded `.chunks.txt` (one JSON event per line, no SSE framing; a file may hold several responses of one
 * conversation back to back): one stream per response, each starting at its `response.created`.
 */
export function responsesFixtureStreams(name: string): RecordedResponseStream[] {
  const lines = fs
    .readFileSync(path.join(RESPONSES_FIXTURES_DIR, name), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const streams: string[][] = [];
  for (const line of lines) {
    if ((JSON.parse(line) as { type?: string }).type === 'response.created' || !streams.length) streams.push([]);
    streams[streams.length - 1]!.push(line);
  }
  return streams.map((ls) => ({
    events: ls.map((l) => JSON.parse(l) as Record<string, any>),
    sse: ls.map((l) => `event: ${(JSON.parse(l) as { type: string }).type}\ndata: ${l}\n\n`).join(''),
  }));
}

/** A recorded Responses JSON body (a Response object or an error body). */
export function responsesFixtureJson(name: string): Record<string, any> {
  return JSON.parse(fs.readFileSync(path.join(RESPONSES_FIXTURES_DIR, name), 'utf8')) as Record<string, any>;
}

export function listResponsesFixtures(suffix: string): string[] {
  return fs
    .readdirSync(RESPONSES_FIXTURES_DIR)
    .filter((f) => f.endsWith(suffix))
    .sort();
}
