import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * `DATA_DIR/stack.json` names the embedded services a running `npm start` owns, so that
 * `npm run cli` or a second role started with the same DATA_DIR uses them instead of starting
 * a second Postgres on the same folder.
 */
export interface StackState {
  pid: number;
  startedAt: string;
  postgres?: string;
  redis?: string;
  /** Absolute chdb folder held by `pid` (chdb opens a folder from one process only). */
  chdbPath?: string;
  solanaRpc?: string;
  api?: string;
}

const FILE = 'stack.json';

export function readLiveStackState(dataDir: string): StackState | undefined {
  let state: StackState;
  try {
    state = JSON.parse(readFileSync(path.join(dataDir, FILE), 'utf8')) as StackState;
  } catch {
    return undefined;
  }
  if (state.pid === process.pid || !isAlive(state.pid)) return undefined;
  return state;
}

export function writeStackState(dataDir: string, state: StackState): void {
  mkdirSync(dataDir, { recursive: true });
  const target = path.join(dataDir, FILE);
  // Write-then-rename: a reader never sees half a file.
  writeFileSync(`${target}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(`${target}.tmp`, target);
}

/** Removes the file only if this process wrote it. */
export function clearStackState(dataDir: string): void {
  const target = path.join(dataDir, FILE);
  try {
    const state = JSON.parse(readFileSync(target, 'utf8')) as StackState;
    if (state.pid === process.pid) rmSync(target, { force: true });
  } catch {
    // nothing to clear
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive but owned by another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
