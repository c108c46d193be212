import type { RunRequest, ToolCall } from '@agentloop/protocol';
import type { ToolSpec } from '@agentloop/llm';
import type { CatalogEntry, ToolCatalog } from '@agentloop/runtime';

/**
 * The tools a run offers the model: its server-side tools found in the catalog, then its client tools. A tool the
 * cached catalog lacks is looked for in Redis first (a tool-runner may have published it since).
 */
export async function toolSpecsFor(catalog: ToolCatalog, request: RunRequest): Promise<ToolSpec[]> {
  const entries = await catalog.lookup(request.tools);
  const specs: ToolSpec[] = [];
  for (const name of request.tools) {
    const e = entries.get(name);
    if (e) specs.push({ name, description: e.description, parameters: e.parameters });
  }
  for (const t of request.clientTools)
    specs.push({ name: t.name, description: t.description, parameters: t.parameters });
  return specs;
}

/**
 * The catalog a response's calls are classified against: read again from Redis when the cached one lacks a tool the
 * run lists and the model called, so a call is answered unknown_tool only when Redis has no such tool. Names the run
 * does not list are unknown whatever the catalog holds: they cause no read.
 */
export function catalogForCalls(
  catalog: ToolCatalog,
  request: RunRequest,
  calls: readonly ToolCall[] = [],
): Promise<Map<string, CatalogEntry>> {
  const listed = new Set(request.tools);
  return catalog.lookup(calls.map((c) => c.name).filter((name) => listed.has(name)));
}
