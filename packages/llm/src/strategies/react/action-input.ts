import { jsonTextProblem } from '@agentloop/protocol';
import type { ToolSpec } from '../../types.js';

/**
 * The first balanced JSON object or array in `text`, found by scanning — braces inside strings (and escaped
 * quotes) do not count. null when none closes.
 */
export function firstJsonValue(text: string): string | null {
  const start = text.search(/[{[]/);
  if (start < 0) return null;
  const stack: string[] = [];
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') stack.push(ch === '{' ? '}' : ']');
    else if (ch === '}' || ch === ']') {
      if (stack.pop() !== ch) return null;
      if (!stack.length) return text.slice(start, i + 1);
    }
  }
  return null;
}

function stripFence(text: string): string {
  const fenced = /```[\w-]*[ \t]*\n?([\s\S]*?)(?:```|$)/.exec(text);
  return (fenced ? fenced[1]! : text).trim();
}

/** The one parameter a tool takes, when it takes exactly one (a bare Action Input string is meant for it). */
function soleParameter(tool: ToolSpec | undefined): string | null {
  const props = tool?.parameters?.properties;
  if (!props || typeof props !== 'object') return null;
  const names = Object.keys(props);
  return names.length === 1 ? names[0]! : null;
}

/**
 * An `Action Input` as the raw JSON argument string of a canonical tool call. A JSON object (possibly fenced, with
 * prose around it) is taken as is; a bare value for a tool with exactly one parameter becomes that parameter;
 * anything else is passed on unchanged, so the tool's validation answers with an `invalid_arguments` result the
 * model can act on.
 */
export function actionArguments(input: string, tool?: ToolSpec): string {
  const text = stripFence(input);
  if (text === '') return '{}';
  // too large or deep to parse and re-serialize safely: passed on as text, answered invalid_arguments by the loop
  if (jsonTextProblem(text)) return text;
  const json = firstJsonValue(text);
  if (json !== null) {
    try {
      const v = JSON.parse(json);
      if (v && typeof v === 'object' && !Array.isArray(v)) return JSON.stringify(v);
    } catch {
      /* not JSON after all: fall through */
    }
  }
  const sole = soleParameter(tool);
  if (sole && !text.startsWith('{')) {
    let value: unknown = text;
    try {
      value = JSON.parse(text); // "quoted", 42, true
    } catch {
      /* a bare word or sentence */
    }
    return JSON.stringify({ [sole]: value });
  }
  return text;
}
