/**
 * A streaming parser for ReAct replies (`Thought:` / `Action:` / `Action Input:` / `Final Answer:`).
 *
 * Labels are recognised at line starts, case-insensitively, with markdown decoration around them (`**Action:**`).
 * `<think>…</think>` blocks are reasoning. Thought text streams out as reasoning, the final answer as text — the
 * answer deltas concatenated equal the parsed answer exactly. Text before any label is held back until it is
 * known to be a preamble (a label follows: reasoning) or the whole reply (no label at all: the answer). An
 * `Observation:` line — or any label after a complete action — ends the step: whatever the model invents after it
 * is ignored. Nothing here throws: output it cannot read becomes a final answer.
 */

export type ReactStep =
  | { kind: 'action'; reasoning: string; name: string; input: string }
  | { kind: 'answer'; reasoning: string; answer: string };

export interface ReactSink {
  reasoning?: (text: string) => void;
  answer?: (text: string) => void;
}

type Label = 'thought' | 'action' | 'input' | 'answer' | 'observation';
type Section = 'preamble' | Label;

const DECOR = String.raw`[\s*_#>\x60]*`;
const LABEL_RE = new RegExp(
  String.raw`^${DECOR}(thought|action[ _]input|action|final[ _]answer|observation)[ \t*_]*:[*_]*[ \t]*`,
  'i',
);
const LABEL_WORDS = [
  'thought',
  'action input',
  'action_input',
  'action',
  'final answer',
  'final_answer',
  'observation',
];
const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';

function labelOf(word: string): Label {
  const w = word.toLowerCase().replace('_', ' ');
  if (w === 'thought') return 'thought';
  if (w === 'action input') return 'input';
  if (w === 'action') return 'action';
  if (w === 'final answer') return 'answer';
  return 'observation';
}

/** Could this unfinished line still turn into a label line once more characters arrive? */
function couldBecomeLabel(partial: string): boolean {
  const s = partial.replace(/^[\s*_#>`]+/, '').toLowerCase();
  if (s === '') return true;
  if (s.startsWith('<') && THINK_OPEN.startsWith(s.slice(0, THINK_OPEN.length))) return true;
  return LABEL_WORDS.some((w) => w.startsWith(s) || (s.startsWith(w) && /^[\s*_`]*$/.test(s.slice(w.length))));
}

export class ReactStreamParser {
  private buf = '';
  private section: Section = 'preamble';
  private atLineStart = true;
  private inThink = false;
  private done = false;
  private preamble = '';
  private reasoning = '';
  private answer = '';
  private heldWhitespace = '';
  private answerStarted = false;
  private actionName = '';
  private actionInput = '';
  private sawLabel = false;
  private onlyThoughts = true;
  private thoughts = '';
  /** Everything outside think blocks, labels included (the answer when nothing else can be read). */
  private visible = '';
  private ended = false;

  constructor(private readonly sink: ReactSink = {}) {}

  push(chunk: string): void {
    if (this.ended || this.done) return;
    this.buf += chunk;
    this.drain(false);
  }

  /** The stream ended: flush what is held and read the step. */
  end(): ReactStep {
    if (!this.ended) {
      this.ended = true;
      if (!this.done) this.drain(true);
    }
    return this.result();
  }

  /** Everything the model wrote outside think blocks, up to where the step ended. */
  visibleText(): string {
    return this.visible.trim();
  }

  private emitReasoning(text: string): void {
    if (!text) return;
    this.reasoning += text;
    this.sink.reasoning?.(text);
  }

  private emitAnswer(text: string): void {
    let t = text;
    if (!this.answerStarted) {
      t = t.replace(/^\s+/, '');
      if (!t) return;
      this.answerStarted = true;
    }
    // trailing whitespace is held until more text follows, so the deltas equal the trimmed answer
    const all = this.heldWhitespace + t;
    const out = all.trimEnd(); // (a /\s+$/ search is quadratic on a long run of whitespace)
    this.heldWhitespace = all.slice(out.length);
    if (out) {
      this.answer += out;
      this.sink.answer?.(out);
    }
  }

  private drain(final: boolean): void {
    while (this.buf && !this.done) {
      if (this.section === 'answer') {
        this.emitAnswer(this.buf);
        this.buf = '';
        return;
      }
      if (this.inThink) {
        const i = this.buf.toLowerCase().indexOf(THINK_CLOSE);
        if (i >= 0) {
          this.emitReasoning(this.buf.slice(0, i));
          this.buf = this.buf.slice(i + THINK_CLOSE.length);
          this.inThink = false;
          this.atLineStart = true;
          continue;
        }
        const keep = final ? 0 : THINK_CLOSE.length - 1;
        this.emitReasoning(this.buf.slice(0, Math.max(0, this.buf.length - keep)));
        this.buf = this.buf.slice(Math.max(0, this.buf.length - keep));
        return;
      }
      const nl = this.buf.indexOf('\n');
      const complete = nl >= 0 || final;
      const line = nl >= 0 ? this.buf.slice(0, nl + 1) : this.buf;
      if (this.atLineStart) {
        const lead = /^\s*/.exec(line)![0];
        const rest = line.slice(lead.length);
        if (rest.toLowerCase().startsWith(THINK_OPEN)) {
          this.buf = this.buf.slice(lead.length + THINK_OPEN.length);
          this.inThink = true;
          continue;
        }
        const m = LABEL_RE.exec(line);
        // a label at the end of an unfinished line may still grow (`Thought:` + ` ` or `**`): wait for more
        if (m) {
          if (!complete && /^[*_ \t]*$/.test(line.slice(m[0].length))) return;
          this.buf = this.buf.slice(m[0].length);
          if (this.enter(labelOf(m[1]!), m[0])) continue;
          return;
        }
        if (!complete && couldBecomeLabel(line)) return; // wait for the rest of the line
      }
      if (!complete) {
        // a partial line that is plain text: pass it on now, the rest of the line follows as text too
        this.text(line);
        this.buf = '';
        this.atLineStart = false;
        return;
      }
      this.text(line);
      this.buf = this.buf.slice(line.length);
      this.atLineStart = true;
    }
  }

  /** Switches section on a label; returns false when the step is over. */
  private enter(label: Label, raw: string): boolean {
    this.atLineStart = false;
    const afterAction = this.section === 'input' || (this.section === 'action' && label !== 'input');
    if (label === 'observation' || (afterAction && this.actionName.trim())) {
      this.done = true;
      this.buf = '';
      return false;
    }
    if (!this.sawLabel) {
      this.sawLabel = true;
      this.emitReasoning(this.preamble);
      this.preamble = '';
    }
    if (label === 'thought' && this.reasoning && !this.reasoning.endsWith('\n')) this.emitReasoning('\n');
    if (label !== 'thought') this.onlyThoughts = false;
    this.visible += raw;
    this.section = label;
    return true;
  }

  private text(t: string): void {
    this.visible += t;
    switch (this.section) {
      case 'preamble':
        this.preamble += t;
        return;
      case 'thought':
        this.thoughts += t;
        this.emitReasoning(t);
        return;
      case 'action':
        this.actionName += t;
        return;
      case 'input':
        this.actionInput += t;
        return;
      default:
        return;
    }
  }

  private result(): ReactStep {
    const name = cleanName(this.actionName);
    if (name) return { kind: 'action', reasoning: this.reasoning.trim(), name, input: this.actionInput.trim() };
    if (this.section === 'answer' || this.answerStarted)
      return { kind: 'answer', reasoning: this.reasoning.trim(), answer: this.answer };
    // nothing readable as an action or an answer: what the model said is its answer (only thoughts: those)
    const thoughtsOnly = this.sawLabel && this.onlyThoughts;
    const said = thoughtsOnly ? this.thoughts : this.visible;
    this.emitAnswer(said.trim());
    return { kind: 'answer', reasoning: thoughtsOnly ? '' : this.reasoning.trim(), answer: this.answer };
  }
}

/** `Action: \`calculator\`` / `Action: "calculator".` / `Action: calculator()` → calculator. */
function cleanName(raw: string): string {
  const first = raw.trim().split('\n')[0] ?? '';
  return first
    .trim()
    .replace(/^[`"'*\s[]+|[`"'*\s\].]+$/g, '')
    .replace(/\(\s*\)$/, '')
    .trim();
}

/** Parses a whole reply at once (same rules as streaming it). */
export function parseReact(text: string): ReactStep {
  const p = new ReactStreamParser();
  p.push(text);
  return p.end();
}
