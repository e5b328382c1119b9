import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { Redis } from 'ioredis';
import { clearOwner, recordOwner, runsIn, stopAbandonedServer } from './abandoned-server.js';
import { freePort } from './free-port.js';
import { LogTail } from './log-tail.js';
import { noStop, type ServiceHandle } from './service-handle.js';

export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';

export interface EmbeddedRedisOptions {
  /** Working folder for dump.rdb / appendonly files. */
  dir: string;
  /** Persist to disk (npm start) or keep everything in memory (tests). */
  persistent: boolean;
  /** Run the server in a process group of its own (see DevstackOptions.ownProcessGroups). */
  ownProcessGroup?: boolean;
}

export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

/** True when a Redis server answers PING at `url` within `timeoutMs`. */
export async function redisAnswers(url: string, timeoutMs = 500): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  client.on('error', () => {}); // the caller only wants yes or no
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * The machine's Redis on 6379 when it answers, else a `redis-server` from PATH on a free port,
 * else an error that says how to get one.
 */
export async function startLocalRedis(options: EmbeddedRedisOptions): Promise<ServiceHandle> {
  if (await redisAnswers(LOCAL_REDIS_URL)) return { url: LOCAL_REDIS_URL, source: 'local', stop: noStop };
  return spawnRedisServer(options);
}

/** Starts `binary` (redis-server from PATH by default) on a free port and waits until it answers. */
export async function spawnRedisServer(
  options: EmbeddedRedisOptions & { binary?: string },
): Promise<ServiceHandle> {
  const port = await freePort();
  mkdirSync(options.dir, { recursive: true });
  const persistence = options.persistent
    ? ['--appendonly', 'yes', '--save', '60 1']
    : ['--save', '', '--appendonly', 'no'];
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', options.dir, ...persistence];
  const log = new LogTail();
  // A redis-server left running on this folder by a process that died without stopping it: two
  // servers must not write the same append-only file.
  await stopAbandonedServer(options.dir, runsIn, 'SIGTERM');
  // For `npm start`, a process group of its own, like the embedded Postgres (abandoned-server.ts):
  // a terminal's Ctrl-C would shut it down under the jobs the service is still finishing.
  const child = spawn(options.binary ?? 'redis-server', args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.ownProcessGroup ?? false,
  });
  child.stdout?.on('data', log.push);
  child.stderr?.on('data', log.push);

  const spawnError = await new Promise<Error | undefined>((resolve) => {
    child.once('error', resolve);
    child.once('spawn', () => resolve(undefined));
  });
  if (spawnError) {
    throw new RedisUnavailableError(
      'No Redis: nothing answers on 127.0.0.1:6379 and there is no redis-server on PATH. Either set ' +
        'REDIS_URL=redis://host:port, or install one (apt-get install redis-server / brew install redis), ' +
        'or run `docker compose up redis`.',
    );
  }

  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  while (!(await redisAnswers(url, 200))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new RedisUnavailableError(`redis-server on port ${port} did not start:\n${log.toString()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (child.pid !== undefined) recordOwner(options.dir, child.pid);
  return {
    url,
    source: 'embedded',
    stop: () => stopChild(child, options.dir),
    abandon: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    },
  };
}

async function stopChild(child: ChildProcess, dir: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM'); // redis-server saves (when persistent) and exits on SIGTERM
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  clearOwner(dir);
}
