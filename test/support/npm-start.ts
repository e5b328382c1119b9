import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * `npm start` as a user runs it, for end-to-end tests: a real process group (as a terminal gives
 * one: a group SIGINT is a Ctrl-C, reaching npm, sh and node at once) on the embedded defaults.
 */
export interface NpmStart {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  base: string;
  /** How npm ended: its exit code, or the signal it re-raised on itself (SIGINT after a Ctrl-C). */
  exited: Promise<string>;
}

export async function npmStart(env: Record<string, string>, port: number): Promise<NpmStart> {
  const child = spawn('npm', ['start'], {
    env: { ...npmEnv(), ...env, PORT: String(port) },
    cwd: process.cwd(),
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? String(code))),
  );
  const started = Date.now();
  while (!output.includes('Press Ctrl-C to stop.')) {
    if (child.exitCode !== null) throw new Error(`npm start exited early:\n${output}`);
    if (Date.now() - started > 120_000) throw new Error(`npm start printed no URLs within 120 s:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, output: () => output, base: `http://127.0.0.1:${port}`, exited };
}

/**
 * What npm needs in a child's environment, and no check for a newer npm: that check asks the
 * registry, and whether npm waits for its answer at exit is npm's business, not the service's.
 */
export function npmEnv(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    npm_config_update_notifier: 'false',
  };
}

/**
 * A process and all its descendants (pid, parent, group, session, state, seconds alive, kernel
 * wait, command), for a failure message: which of script, npm, node and the embedded servers were
 * still alive, and on what each one waited.
 */
export function processTree(rootPid: number): string {
  try {
    const table = execFileSync('ps', ['-eo', 'pid,ppid,pgid,sid,stat,etimes,wchan:24,args'], {
      encoding: 'utf8',
    });
    const [header, ...rows] = table.trimEnd().split('\n');
    const idsOf = (row: string) => row.trim().split(/\s+/).slice(0, 2).map(Number); // [pid, ppid]
    const inTree = new Set([rootPid]);
    for (let grew = true; grew;) {
      grew = false;
      for (const row of rows) {
        const [pid, ppid] = idsOf(row);
        if (!inTree.has(pid!) && inTree.has(ppid!)) {
          inTree.add(pid!);
          grew = true;
        }
      }
    }
    return [header, ...rows.filter((row) => inTree.has(idsOf(row)[0]!))].join('\n');
  } catch (error) {
    return `(ps failed: ${String(error)})`;
  }
}

/** Ctrl-C in a terminal: SIGINT to the whole process group. */
export function ctrlC(started: NpmStart): void {
  process.kill(-started.child.pid!, 'SIGINT');
}

/** Kills whatever is left of the group (after a failed test). */
export function killGroup(child: ChildProcessWithoutNullStreams): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // the group is gone already
  }
}

/** Processes whose command line names `folder`: postgres, redis-server, ... */
export function processesUsing(folder: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmdline.includes(folder)) found.push(`${entry}: ${cmdline}`);
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

/** Waits (up to 15 s) for every process under the folder to finish its shutdown. */
export async function settledProcessesUsing(folder: string): Promise<string[]> {
  const deadline = Date.now() + 15_000;
  let found = processesUsing(folder);
  while (found.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    found = processesUsing(folder);
  }
  return found;
}

/** What `npm start` wrote to DATA_DIR/stack.json while it runs. */
export function stackState(dataDir: string): {
  pid: number;
  postgres: string;
  solanaRpc: string;
  /** Only when the service started its own redis-server. */
  redis?: string;
} {
  return JSON.parse(readFileSync(path.join(dataDir, 'stack.json'), 'utf8')) as ReturnType<typeof stackState>;
}

/** The JSON log lines of the output (the service logs JSON when stdout is not a terminal). */
export function logLines(output: string): Array<Record<string, unknown> & { msg?: string }> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown> & { msg?: string }];
      } catch {
        return [];
      }
    });
}
