import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { postgresAnswers } from '../src/devstack/postgres-probe.js';
import { redisAnswers } from '../src/devstack/redis.devstack.js';
import { isAlive, ownerFileOf } from '../src/devstack/abandoned-server.js';
import {
  processImage,
  signal,
  startLogged,
  waitGone,
  type ProcessImage,
  type Started,
} from './chaos-processes.js';

/**
 * The six faults. Each takes a dependency away for `outageMs` and brings it back, and resolves
 * to the time it answered again ("back"): recovery is measured from there.
 */
export interface Fault {
  name: string;
  inject(outageMs: number): Promise<{ backAt: number }>;
}

/** What the faults act on; `service()` changes when fault (e) restarts the service. */
export interface Targets {
  redisUrl: string;
  logDir: string;
  postgresDir: string;
  service: () => Started;
  restartService: () => Promise<void>;
  localnet: () => Started;
  restartLocalnet: () => Promise<void>;
  stackPostgresUrl: () => string;
}

/** Starts a killed server again from its image, detached, with its output in the log folder. */
function respawn(image: ProcessImage, logFile: string, env: Record<string, string>): Started {
  const [command, ...args] = image.argv;
  return startLogged(command!, args, { env, cwd: image.cwd, logFile, uid: image.uid, gid: image.gid });
}

export function faults(t: Targets): Fault[] {
  return [
    {
      name: 'a) redis kill -9',
      inject: async (outageMs) => {
        const { pid, image } = await redisImage(t.redisUrl);
        signal(pid, 'SIGKILL');
        await waitGone(pid, 5_000);
        await sleep(outageMs);
        const server = respawn(image, path.join(t.logDir, 'redis.log'), { PATH: process.env.PATH ?? '' });
        const deadline = Date.now() + 30_000;
        while (!(await redisAnswers(t.redisUrl, 200))) {
          if (Date.now() > deadline) throw new Error(`redis did not restart:\n${server.output()}`);
          await sleep(50);
        }
        return { backAt: Date.now() };
      },
    },
    {
      name: 'b) postgres kill -9',
      inject: async (outageMs) => {
        const pid = Number(readFileSync(path.join(t.postgresDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
        const image = processImage(pid);
        signal(pid, 'SIGKILL');
        await waitGone(pid, 5_000);
        await sleep(outageMs);
        const server = await restartPostgres(image, t);
        // Recorded as the service's server, as the service records its own: a later start of the
        // service after its owner died (fault e) then stops it and starts its own, as it would
        // have done with the original.
        writeFileSync(
          ownerFileOf(t.postgresDir),
          `${JSON.stringify({ owner: t.service().pid, server: server.pid })}\n`,
        );
        return { backAt: Date.now() };
      },
    },
    {
      name: 'c) localnet RPC stopped',
      inject: async (outageMs) => {
        const localnet = t.localnet();
        signal(localnet.pid, 'SIGTERM'); // it saves its ledger and exits
        if (!(await waitGone(localnet.pid, 15_000))) signal(localnet.pid, 'SIGKILL');
        await sleep(outageMs);
        await t.restartLocalnet();
        return { backAt: Date.now() };
      },
    },
    {
      name: 'd) clickhouse unavailable',
      inject: async (outageMs) => {
        const pid = t.service().pid;
        signal(pid, 'SIGUSR2'); // bench/chaos-clickhouse-fault.ts: on
        await sleep(outageMs);
        signal(pid, 'SIGUSR2'); // off
        return { backAt: Date.now() };
      },
    },
    {
      name: 'e) service kill -9 (group)',
      inject: async (outageMs) => {
        const pid = t.service().pid;
        signal(pid, 'SIGKILL', true);
        await waitGone(pid, 5_000);
        await sleep(outageMs);
        await t.restartService();
        return { backAt: Date.now() };
      },
    },
    {
      // `npm start` killed as a whole with its embedded chain: the localnet loses what it had not
      // made durable, and the service finds the payments it had in flight on restart.
      name: 'f) service and localnet kill -9 together',
      inject: async (outageMs) => {
        const service = t.service().pid;
        const localnet = t.localnet().pid;
        signal(service, 'SIGKILL', true);
        signal(localnet, 'SIGKILL', true);
        await Promise.all([waitGone(service, 5_000), waitGone(localnet, 5_000)]);
        await sleep(outageMs);
        await t.restartLocalnet();
        await t.restartService();
        return { backAt: Date.now() };
      },
    },
  ];
}

/**
 * redis-server rewrites its process title ("redis-server 127.0.0.1:PORT"), so /proc/PID/cmdline
 * no longer holds its arguments: they are read back from the server itself (the pid from INFO, the settings it was started with from CONFIG GET), with the cwd from /proc.
 */
async function redisImage(url: string): Promise<{ pid: number; image: ProcessImage }> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const info = await client.info('server');
    const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
    // The title's first word, found on PATH: /proc/PID/exe names the binary Debian links
    // redis-server to (redis-check-rdb, which picks its role from argv[0]), and INFO's
    // `executable` is argv[0] joined to the start folder.
    const executable = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split(/[\0 ]/)[0] ?? 'redis-server';
    const args: string[] = [];
    for (const name of ['port', 'bind', 'dir', 'appendonly', 'save']) {
      const [, value] = (await client.config('GET', name)) as [string, string];
      args.push(`--${name}`, value);
    }
    const { cwd, uid, gid } = processImage(pid);
    return { pid, image: { argv: [executable, ...args], cwd, uid, gid } };
  } finally {
    client.disconnect();
  }
}

/**
 * Postgres refuses to start while backends of the killed postmaster still hold its shared memory
 * (they exit on their own once they notice): tries again until one start stays up and answers.
 */
async function restartPostgres(image: ProcessImage, t: Targets): Promise<Started> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const server = respawn(image, path.join(t.logDir, 'postgres.log'), {
      PATH: process.env.PATH ?? '',
      LC_MESSAGES: 'C',
    });
    for (let i = 0; i < 100 && isAlive(server.pid); i += 1) {
      if (await postgresAnswers(t.stackPostgresUrl())) return server;
      await sleep(100);
    }
    if (isAlive(server.pid)) return server;
    if (Date.now() > deadline) throw new Error(`postgres did not restart:\n${server.output().slice(-2000)}`);
    await sleep(500);
  }
}
