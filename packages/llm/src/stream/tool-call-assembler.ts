import { UNNAMED_TOOL, newCallId, tryParseJson, type ToolCall } from '@agentloop/protocol';

export interface ToolCallFragment {
  index?: number | null;
  id?: string | null;
  name?: string | null;
  arguments?: string | null;
}

interface Slot {
  id: string | null;
  name: string;
  args: string;
}

/**
 * Assembles streamed tool-call fragments into whole calls. Fragments are keyed by index (parallel calls
 * interleave); arguments are concatenated; id and name are taken when present; a fragment that restates the
 * whole arguments object replaces what was accumulated instead of corrupting it; calls without an id get a
 * generated one.
 */
export class ToolCallAssembler {
  /** Made by the first fragment: an assembler waits with its model call, most of them for a response without calls. */
  private slots: Map<number, Slot> | null = null;
  private lastIndex = -1;

  add(f: ToolCallFragment): void {
    const index = this.indexOf(f);
    this.lastIndex = index;
    this.slots ??= new Map();
    let slot = this.slots.get(index);
    if (!slot) {
      slot = { id: null, name: '', args: '' };
      this.slots.set(index, slot);
    }
    if (f.id) slot.id = f.id;
    if (f.name) slot.name = slot.name && !f.name.startsWith(slot.name) ? slot.name + f.name : f.name;
    if (f.arguments) slot.args = mergeArguments(slot.args, f.arguments);
  }

  get size(): number {
    return this.slots?.size ?? 0;
  }

  /**
   * The calls in index order, each with an id. Every entry the model opened is a call: one without a name is kept
   * under UNNAMED_TOOL, so the loop answers it `unknown_tool` instead of it vanishing unanswered.
   */
  finish(): ToolCall[] {
    return [...(this.slots ?? [])]
      .sort(([a], [b]) => a - b)
      .map(([, s]) => ({
        id: s.id ?? newCallId(),
        name: s.name || UNNAMED_TOOL,
        arguments: s.args === '' ? '{}' : s.args,
      }));
  }

  private indexOf(f: ToolCallFragment): number {
    if (typeof f.index === 'number') return f.index;
    if (f.id && this.slots) {
      for (const [i, s] of this.slots) if (s.id === f.id) return i;
      return Math.max(...this.slots.keys()) + 1;
    }
    return this.lastIndex < 0 ? 0 : this.lastIndex;
  }
}

function mergeArguments(acc: string, fragment: string): string {
  if (acc === '') return fragment;
  if (fragment.trimStart().startsWith('{')) {
    const whole = tryParseJson(fragment);
    if (whole.ok && whole.value !== null && typeof whole.value === 'object') {
      // A complete object arriving after a complete object, or a cumulative restatement: replace.
      if (tryParseJson(acc).ok || fragment.startsWith(acc)) return fragment;
    }
  }
  return acc + fragment;
}
