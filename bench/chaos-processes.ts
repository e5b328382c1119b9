import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive } from '../src/devstack/abandoned-server.js';

/**
 * Processes of the chaos run: started detached (a process group each, so a group kill of the
 * service never reaches them), their output appended to a log file for the report's evidence.
 */
export interface Started {
  child: ChildProcess;
  pid: number;
  /** Everything the process printed so far (stdout and stderr). */
  output: () => string;
}

export function startLogged(
  command: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string; logFile: string; uid?: number; gid?: number },
): Started {
  const log = createWriteStream(options.logFile, { flags: 'a' });
  const child = spawn(command, args, {
    env: options.env,
    cwd: options.cwd ?? process.cwd(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid } : {}),
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 2_000_000) output = output.slice(-1_000_000); // a long run must not grow forever
    log.write(chunk);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.once('exit', () => log.end());
  // A failed spawn (no such binary) must not crash the run before its clean-up.
  child.on('error', (error) => {
    output += `\nspawn failed: ${error.message}\n`;
  });
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  return { child, pid: child.pid, output: () => output };
}

/** Waits until `text` appears in the output; throws with the output when the process exits first. */
export async function waitForOutput(started: Started, text: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!started.output().includes(text)) {
    if (started.child.exitCode !== null || started.child.signalCode !== null)
      throw new Error(`${started.pid} exited before printing "${text}":\n${started.output().slice(-3000)}`);
    if (Date.now() > deadline) throw new Error(`no "${text}" within ${timeoutMs} ms:\n${started.output()}`);
    await sleep(100);
  }
}

/** What is needed to start a process again exactly as it ran: argv, cwd and owner. */
export interface ProcessImage {
  argv: string[];
  cwd: string;
  uid: number;
  gid: number;
}

/** Reads the image from /proc; call it before killing the process. */
export function processImage(pid: number): ProcessImage {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  const gid = Number(/^Gid:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  return { argv, cwd: readlinkSync(`/proc/${pid}/cwd`), uid, gid };
}

export function signal(pid: number, name: NodeJS.Signals, group = false): void {
  try {
    process.kill(group ? -pid : pid, name);
  } catch {
    // gone already
  }
}

export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(50);
  return !isAlive(pid);
}

/**
 * Pids whose command line, working folder or DATA_DIR lies under `folder` (the run's temp DATA_DIR): what
 * this run started, and only that, for the final clean-up.
 */
export function pidsUnder(folder: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      let cwd = '';
      let environ = '';
      try {
        cwd = readlinkSync(`/proc/${entry}/cwd`);
        environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
      } catch {
        // another user's process: not readable
      }
      // The node children get the folder through DATA_DIR only.
      if (cmdline.includes(folder) || cwd.startsWith(folder) || environ.includes(`DATA_DIR=${folder}`))
        found.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

/** Stops every process under `folder`: `first` signal, SIGKILL after `graceMs`. */
export async function stopAllUnder(
  folder: string,
  first: NodeJS.Signals,
  graceMs: number,
): Promise<number[]> {
  const pids = pidsUnder(folder);
  for (const pid of pids) signal(pid, first);
  const deadline = Date.now() + graceMs;
  while (pids.some(isAlive) && Date.now() < deadline) await sleep(100);
  for (const pid of pids.filter(isAlive)) signal(pid, 'SIGKILL');
  return pids;
}
