import { readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Under `npm start` the embedded Postgres and redis-server run in process groups of their own (a
 * terminal's Ctrl-C must not stop them under the jobs still using them; the service stops them
 * last). The price: when the process that started one dies without stopping it (SIGKILL, a
 * crash), the server lives on, holding its folder, and the next start on the same folder would
 * fail or, for Redis, write the same append-only file twice. (A server in the starter's group
 * outlives a SIGKILL of the starter alone just as well.) So each start records which process owns
 * the server it started, in `<folder>.owner.json`, and a start that finds a live server of a dead
 * owner stops it first.
 */
interface OwnerRecord {
  /** The process that started the server and is responsible for stopping it. */
  owner: number;
  server: number;
}

export function ownerFileOf(dir: string): string {
  return `${path.resolve(dir)}.owner.json`;
}

export function recordOwner(dir: string, serverPid: number): void {
  writeFileSync(ownerFileOf(dir), `${JSON.stringify({ owner: process.pid, server: serverPid })}\n`);
}

export function clearOwner(dir: string): void {
  rmSync(ownerFileOf(dir), { force: true });
}

/**
 * Stops the server a dead owner left running on `dir` (signal first, SIGKILL after `timeoutMs`);
 * resolves to its pid, or undefined when there was none. A live owner's server is left alone,
 * and so is a pid that `isServerOn` does not recognise as a server on `dir` (pids are reused).
 */
export async function stopAbandonedServer(
  dir: string,
  isServerOn: (pid: number, dir: string) => boolean,
  signal: NodeJS.Signals,
  timeoutMs = 10_000,
): Promise<number | undefined> {
  let record: OwnerRecord;
  try {
    record = JSON.parse(readFileSync(ownerFileOf(dir), 'utf8')) as OwnerRecord;
  } catch {
    return undefined;
  }
  if (isAlive(record.owner)) return undefined;
  if (!isAlive(record.server) || !isServerOn(record.server, dir)) {
    clearOwner(dir);
    return undefined;
  }
  signalQuietly(record.server, signal);
  const deadline = Date.now() + timeoutMs;
  while (isAlive(record.server) && Date.now() < deadline) await sleep(50);
  if (isAlive(record.server)) signalQuietly(record.server, 'SIGKILL');
  while (isAlive(record.server)) await sleep(20);
  clearOwner(dir);
  return record.server;
}

/** Whether `pid` runs with `dir` as its working directory (Postgres and Redis both chdir there). */
export function runsIn(pid: number, dir: string): boolean {
  try {
    return readlinkSync(`/proc/${pid}/cwd`) === path.resolve(dir);
  } catch {
    return false; // gone, not ours to read, or no /proc: leave it alone rather than risk another process
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, but another user's (the embedded Postgres runs as the OS user `postgres`).
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}
