import type { Logger } from '@agentloop/runtime';
import type { ToolContext } from './tool-definition.js';

/** A call's logger, made (its bindings serialized) only when the tool logs: most calls never do. */
export function lazyChild(parent: Logger, bindings: Record<string, string>): ToolContext['logger'] {
  let child: Logger | null = null;
  const at =
    (level: 'info' | 'warn' | 'error' | 'debug') =>
    (...a: unknown[]) => {
      const c = (child ??= parent.child(bindings));
      (c[level] as (...x: unknown[]) => void).apply(c, a);
    };
  return { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}
