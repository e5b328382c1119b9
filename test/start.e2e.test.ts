import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { freePort } from '../src/devstack/free-port.js';
import { postmasterPid } from '../src/devstack/index.js';
import { npmEnv } from './support/npm-start.js';

/**
 * `npm start` as a user runs it: a real process on the embedded defaults (no DATABASE_URL, no
 * CLICKHOUSE_URL), stopped with Ctrl-C (SIGINT).
 */
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ledgerfeed-start-'));
chmodSync(dataDir, 0o755);
const children: ChildProcessWithoutNullStreams[] = [];
afterAll(() => {
  for (const child of children) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  }
  for (const line of processesUsing(dataDir)) process.kill(Number(line.split(':')[0]), 'SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  base: string;
}

async function start(port: number, localnetPort: number): Promise<Started> {
  const env: Record<string, string> = {
    ...npmEnv(),
    DATA_DIR: dataDir,
    PORT: String(port),
    LOCALNET_PORT: String(localnetPort),
    LOG_LEVEL: 'info',
  };
  if (process.env.REDIS_URL) env.REDIS_URL = process.env.REDIS_URL;
  // Its own process group, as a terminal gives it: Ctrl-C then reaches npm, tsx and node at once.
  const child = spawn('npm', ['start'], { env, cwd: process.cwd(), detached: true });
  children.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const started = Date.now();
  while (!output.includes('Press Ctrl-C to stop.')) {
    if (child.exitCode !== null) throw new Error(`npm start exited early:\n${output}`);
    if (Date.now() - started > 60_000) throw new Error(`npm start printed no URLs within 60 s:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, output: () => output, base: `http://127.0.0.1:${port}` };
}

/** Resolves to how npm ended: 0, or the SIGINT it re-raises on itself after its child exits. */
async function stopWithCtrlC(child: ChildProcessWithoutNullStreams): Promise<string> {
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? String(code))),
  );
  process.kill(-child.pid!, 'SIGINT'); // the whole group, like Ctrl-C in a terminal
  return exited;
}

/** Processes whose command line names our data folder: postgres, redis-server, ... */
function processesUsing(folder: string): string[] {
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

/** Waits (up to 15 s) for every process under the data folder to finish its shutdown. */
async function settledProcessesUsing(folder: string): Promise<string[]> {
  const deadline = Date.now() + 15_000;
  let found = processesUsing(folder);
  while (found.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    found = processesUsing(folder);
  }
  return found;
}

function stackPostgresUrl(): string {
  const state = JSON.parse(readFileSync(path.join(dataDir, 'stack.json'), 'utf8')) as { postgres: string };
  return state.postgres;
}

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

describe('npm start', { timeout: 180_000 }, () => {
  test('prints its URLs, serves health, stops on Ctrl-C with no child left, and keeps its data', async () => {
    const port = await freePort();
    const localnetPort = await freePort();
    const first = await start(port, localnetPort);
    expect(first.output()).toMatch(/REST\s+http:\/\/127\.0\.0\.1:\d+\/api\/v1/);
    expect(first.output()).toMatch(/Postgres\s+embedded/);
    expect(first.output()).toMatch(/ClickHouse\s+embedded/);
    expect(first.output()).toMatch(new RegExp(`Solana\\s+embedded\\s+http://127.0.0.1:${localnetPort}`));
    expect(first.output()).not.toMatch(/postgres:postgres@/); // the password is redacted

    const health = await fetch(`${first.base}/healthz`);
    expect(health.status).toBe(200);
    const graphql = await fetch(`${first.base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ health { status } }' }),
    });
    expect(await graphql.json()).toEqual({ data: { health: { status: 'ok' } } });

    // stack.json lets other commands find the running Postgres.
    await query(
      stackPostgresUrl(),
      `INSERT INTO accounts (handle, display_name) VALUES ('kept_across', 'Kept')`,
    );

    expect(await stopWithCtrlC(first.child)).toMatch(/^(0|SIGINT)$/);
    expect(first.output()).toMatch(/SIGINT: stopping/);
    expect(await settledProcessesUsing(dataDir)).toEqual([]);
    expect(existsSync(path.join(dataDir, 'stack.json'))).toBe(false);

    const second = await start(port, localnetPort);
    expect(second.output()).not.toMatch(/migrations applied/);
    expect(await query(stackPostgresUrl(), `SELECT handle FROM accounts`)).toEqual([
      { handle: 'kept_across' },
    ]);

    // Postgres dies under a running server: health turns 503, the server lives on.
    const pid = postmasterPid(path.join(dataDir, 'postgres'));
    expect(pid).toBeTypeOf('number');
    process.kill(pid!, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const down = await fetch(`${second.base}/healthz`);
    expect(down.status).toBe(503);
    const report = (await down.json()) as {
      status: string;
      dependencies: Record<string, { status: string }>;
    };
    expect(report.status).toBe('down');
    expect(report.dependencies.postgres?.status).toBe('down');
    expect(report.dependencies.redis?.status).toBe('up');
    expect(report.dependencies.clickhouse?.status).toBe('up');
    expect(report.dependencies.solana?.status).toBe('up');
    expect(second.child.exitCode).toBeNull();
    expect((await fetch(`${second.base}/metrics`)).status).toBe(200);

    expect(await stopWithCtrlC(second.child)).toMatch(/^(0|SIGINT)$/);
    expect(await settledProcessesUsing(dataDir)).toEqual([]);
  });
});
