import { mkdirSync, mkdtempSync, chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import {
  spawnRedisServer,
  redisAnswers,
  RedisUnavailableError,
  startEmbeddedPostgres,
} from '../src/devstack/index.js';
import { isAlive, ownerFileOf } from '../src/devstack/abandoned-server.js';
import { readLiveStackState, writeStackState } from '../src/devstack/state-file.js';
import { resolveClickHouse } from '../src/devstack/clickhouse.devstack.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'ledgerfeed-devstack-'));
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('embedded Postgres', () => {
  test('initialises a cluster, serves the application database, and keeps data across restarts', async () => {
    const dir = path.join(root, 'pg-ok');
    const first = await startEmbeddedPostgres({ dir, database: 'app', persistent: true });
    expect(first.source).toBe('embedded');
    expect(new URL(first.url).pathname).toBe('/app');
    // Through the Unix socket in the cluster folder, not loopback TCP.
    expect(new URL(first.url).searchParams.get('host')).toBe(dir);
    let client = new pg.Client({ connectionString: first.url });
    await client.connect();
    expect((await client.query('SELECT inet_server_addr() AS addr')).rows).toEqual([{ addr: null }]);
    await client.query('CREATE TABLE kept (v text); INSERT INTO kept VALUES ($$still here$$)');
    await client.end();
    await first.stop();

    const second = await startEmbeddedPostgres({ dir, database: 'app', persistent: true });
    client = new pg.Client({ connectionString: second.url });
    await client.connect();
    expect((await client.query('SELECT v FROM kept')).rows).toEqual([{ v: 'still here' }]);
    await client.end();
    await second.stop();
    expect(await canConnect(second.url)).toBe(false);
  });

  test('for npm start, runs in a process group of its own, so a Ctrl-C in the terminal does not reach it', async () => {
    const dir = path.join(root, 'pg-group');
    const own = await startEmbeddedPostgres({
      dir,
      database: 'app',
      persistent: false,
      ownProcessGroup: true,
    });
    const pid = ownerOf(dir).server;
    expect(processGroupOf(pid)).toBe(pid);
    await own.stop();
    expect(isAlive(pid)).toBe(false);
    // Otherwise (tests, the CLI) in the caller's group: a Ctrl-C of a test run ends it too.
    const shared = await startEmbeddedPostgres({ dir, database: 'app', persistent: false });
    expect(processGroupOf(ownerOf(dir).server)).toBe(processGroupOf(process.pid));
    await shared.stop();
  });

  test('a server whose owner died without stopping it is stopped by the next start on the folder', async () => {
    const dir = path.join(root, 'pg-abandoned');
    const first = await startEmbeddedPostgres({ dir, database: 'app', persistent: true });
    const abandoned = ownerOf(dir).server;
    // As if the process that started it had been killed with SIGKILL.
    writeFileSync(ownerFileOf(dir), JSON.stringify({ owner: DEAD_PID, server: abandoned }));
    const second = await startEmbeddedPostgres({ dir, database: 'app', persistent: true });
    expect(isAlive(abandoned)).toBe(false);
    expect(ownerOf(dir)).toEqual({ owner: process.pid, server: expect.any(Number) });
    expect(await canConnect(second.url)).toBe(true);
    await second.stop();
    await first.stop(); // already gone: a no-op
  });

  test('a server of a live owner is left alone (the second start fails as before)', async () => {
    const dir = path.join(root, 'pg-owned');
    const first = await startEmbeddedPostgres({ dir, database: 'app', persistent: true });
    await expect(startEmbeddedPostgres({ dir, database: 'app', persistent: true })).rejects.toThrow(
      /failed to start/,
    );
    expect(await canConnect(first.url)).toBe(true);
    await first.stop();
  });

  test('a failed start shows what postgres printed', async () => {
    const dir = path.join(root, 'pg-broken');
    mkdirSync(dir, { recursive: true });
    // A half-made cluster folder (PG_VERSION but nothing else): postgres refuses it and says why.
    writeFileSync(path.join(dir, 'PG_VERSION'), '18\n');
    chmodSync(dir, 0o777);
    await expect(startEmbeddedPostgres({ dir, database: 'app', persistent: true })).rejects.toThrow(
      /failed to start[\s\S]*\| postgres: could not access the server configuration file/,
    );
  });
});

describe('Redis fallback', () => {
  test('starts redis-server from PATH on a free port and stops it', async () => {
    const redis = await spawnRedisServer({ dir: path.join(root, 'redis'), persistent: false });
    expect(redis.source).toBe('embedded');
    expect(await redisAnswers(redis.url)).toBe(true);
    await redis.stop();
    expect(await redisAnswers(redis.url)).toBe(false);
  });

  test('runs in a process group of its own; an abandoned one is stopped by the next start', async () => {
    const dir = path.join(root, 'redis-abandoned');
    const first = await spawnRedisServer({ dir, persistent: false, ownProcessGroup: true });
    const abandoned = ownerOf(dir).server;
    expect(processGroupOf(abandoned)).toBe(abandoned);
    writeFileSync(ownerFileOf(dir), JSON.stringify({ owner: DEAD_PID, server: abandoned }));
    const second = await spawnRedisServer({ dir, persistent: false });
    expect(await redisAnswers(first.url)).toBe(false);
    expect(await redisAnswers(second.url)).toBe(true);
    await second.stop();
    await first.stop();
  });

  test('without a binary the error names every way out', async () => {
    const attempt = spawnRedisServer({
      dir: path.join(root, 'redis2'),
      persistent: false,
      binary: 'no-such-redis-server',
    });
    await expect(attempt).rejects.toThrow(RedisUnavailableError);
    await expect(attempt).rejects.toThrow(
      /REDIS_URL[\s\S]*apt-get install redis-server[\s\S]*brew install redis[\s\S]*docker compose up redis/,
    );
  });
});

describe('stack.json', () => {
  test('names the services of a live process and is ignored once that process is gone', () => {
    const dir = path.join(root, 'state');
    writeStackState(dir, { pid: process.ppid, startedAt: 'now', postgres: 'postgres://x' });
    expect(readLiveStackState(dir)?.postgres).toBe('postgres://x');
    writeStackState(dir, { pid: 2 ** 22 + 12345, startedAt: 'now', postgres: 'postgres://x' });
    expect(readLiveStackState(dir)).toBeUndefined();
  });

  test('a second process is told clearly that the chdb folder is taken', () => {
    const dataDir = path.join(root, 'data');
    const shared = { pid: process.ppid, startedAt: 'now', chdbPath: path.join(dataDir, 'clickhouse') };
    expect(() => resolveClickHouse(undefined, dataDir, shared)).toThrow(
      /held by Ledgerfeed process .*CLICKHOUSE_URL/,
    );
    expect(resolveClickHouse('http://ch:8123', dataDir, shared)).toEqual({
      kind: 'http',
      url: 'http://ch:8123',
    });
  });
});

/** A pid no process has (above the kernel's pid_max default of 2^22). */
const DEAD_PID = 2 ** 22 + 12_345;

function ownerOf(dir: string): { owner: number; server: number } {
  return JSON.parse(readFileSync(ownerFileOf(dir), 'utf8')) as { owner: number; server: number };
}

function processGroupOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}
