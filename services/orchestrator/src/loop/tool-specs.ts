import type { RunRequest } from '@agentloop/protocol';
import type { ToolSpec } from '@agentloop/llm';
import type { ToolCatalog } from '@agentloop/runtime';

/** The tools a run offers the model: its server-side tools found in the catalog, then its client tools. */
export async function toolSpecsFor(catalog: ToolCatalog, request: RunRequest): Promise<ToolSpec[]> {
  const entries = await catalog.all();
  const specs: ToolSpec[] = [];
  for (const name of request.tools) {
    const e = entries.get(name);
    if (e) specs.push({ name, description: e.description, parameters: e.parameters });
  }
  for (const t of request.clientTools) specs.push({ name: t.name, description: t.description, parameters: t.parameters });
  return specs;
}
