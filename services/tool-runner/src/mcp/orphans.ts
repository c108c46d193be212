import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Stdio MCP servers that outlive a runner killed with kill -9. Most servers end when their stdin closes; some keep
 * running (background work, an open pool) and would be orphans. Each McpTools writes the pids of its stdio servers,
 * with their start times (a reused pid is never mistaken for one), to a file of its own; a runner starting kills the
 * servers, and their descendants, of every file whose runner is gone. Linux only (/proc); elsewhere nothing is kept.
 */
const DIR = path.join(os.tmpdir(), 'agentloop-mcp-servers');
const LINUX = process.platform === 'linux';

/** A process's start time (clock ticks since boot: /proc/<pid>/stat field 22), or null when it is not running. */
function startTime(pid: number): string | null {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return fields[0] === 'Z' ? null : (fields[19] ?? null); // a zombie has ended
  } catch {
    return null;
  }
}

/** pid and every process below it (read before any is killed: killed, a parent's children are re-parented). */
function tree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const ppid = Number(fs.readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // ended meanwhile
    }
  }
  const out: number[] = [];
  const visit = (pid: number) => {
    out.push(pid);
    for (const c of children.get(pid) ?? []) visit(c);
  };
  visit(root);
  return out;
}

let instances = 0;

/** The stdio servers of one McpTools, in a file named after its runner (pid and start time). */
export class StdioServerRecord {
  private readonly file: string | null;
  private readonly servers = new Map<number, string>();

  constructor() {
    const self = LINUX ? startTime(process.pid) : null;
    this.file = self ? path.join(DIR, `${process.pid}-${self}-${instances++}.json`) : null;
  }

  add(pid: number | null | undefined): void {
    const start = pid && this.file ? startTime(pid) : null;
    if (!pid || !start) return;
    this.servers.set(pid, start);
    this.write();
  }

  remove(pid: number | null | undefined): void {
    if (pid && this.servers.delete(pid)) this.write();
  }

  close(): void {
    this.servers.clear();
    if (this.file) fs.rmSync(this.file, { force: true });
  }

  private write(): void {
    if (!this.file) return;
    try {
      fs.mkdirSync(DIR, { recursive: true, mode: 0o700 });
      fs.writeFileSync(this.file, JSON.stringify([...this.servers].map(([pid, start]) => ({ pid, start }))));
    } catch {
      // a read-only temp directory: the servers still end with their stdin, as most do
    }
  }
}

/** Kills the stdio servers (and what they started) left by runners that are gone; returns how many servers. */
export function reapOrphanedServers(log: (fields: object, msg: string) => void): number {
  if (!LINUX) return 0;
  let files: string[];
  try {
    files = fs.readdirSync(DIR);
  } catch {
    return 0;
  }
  let reaped = 0;
  for (const f of files) {
    const m = /^(\d+)-(\d+)-\d+\.json$/.exec(f);
    if (!m || startTime(Number(m[1])) === m[2]) continue; // its runner still runs
    const file = path.join(DIR, f);
    try {
      const servers = JSON.parse(fs.readFileSync(file, 'utf8')) as Array<{ pid: number; start: string }>;
      for (const s of servers) {
        if (typeof s?.pid !== 'number' || startTime(s.pid) !== s.start) continue; // ended, or its pid is another's now
        for (const pid of tree(s.pid)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // ended meanwhile, or not ours to kill
          }
        }
        reaped++;
        log({ pid: s.pid, runnerPid: Number(m[1]) }, 'MCP server left running by a tool-runner that is gone: killed');
      }
      fs.rmSync(file, { force: true });
    } catch {
      // another runner's file it is still writing, or not ours to read
    }
  }
  return reaped;
}
