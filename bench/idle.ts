/**
 * What the whole service costs the machine when nothing happens, with many followed accounts
 * (issue 52):
 *
 *   npm run bench:idle
 *
 * Measured from outside, as the issue measured the per-address follower: `npm start` (every role,
 * the embedded defaults) in a process group of its own on a fresh DATA_DIR, with a redis-server of
 * its own (what `npm start` starts when nothing answers on 6379: the machine's shared Redis would
 * mix other users' commands into the figure). Once the block follower has its cursor,
 * BENCH_ACCOUNTS (100,000) accounts with wallet addresses of fresh ed25519 key pairs (as custodial
 * wallets are) go straight into Postgres; the bench waits until the follower has derived every
 * wallet's token accounts (follow_queue empty and ledgerfeed_block_follower_followed_accounts at
 * least two per wallet; BENCH_FOLLOW_LIMIT_SECONDS, 600, else it fails), then BENCH_SETTLE_SECONDS
 * (60) with nothing read, then measures BENCH_SECONDS (30) with nothing read either.
 *
 * The figure: the CPU of the service's process tree (npm, node with its threads, the embedded
 * Postgres and every session, the redis-server), summed from /proc/<pid>/stat, in cores. Target:
 * **at most 0.1 cores**. Printed beside it: the machine's busy CPU over the same window (every
 * process: on a shared machine others' work is in it), the split by process and by thread of the
 * service's node, and Postgres transactions and Redis commands per second.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createWriteStream, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import bs58 from 'bs58';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { createRedis } from '../src/adapters/redis/index.js';
import { ownerFileOf, runsIn, stopAbandonedServer } from '../src/devstack/abandoned-server.js';
import { freePort, freePortPair } from '../src/devstack/free-port.js';
import { spawnRedisServer } from '../src/devstack/index.js';
import { intSetting } from './bench-settings.js';
import { pollUntil, secondsSince } from './clock.js';
import { cpuTimes, describeCpu } from './machine-cpu.js';
import { processThreadCpu, readTree, treeCores, type TreeReading } from './process-tree-cpu.js';
import { runBench, type Bench } from './runner.js';

const TARGET_CORES = 0.1;
/** Accounts per INSERT statement. */
const INSERT_BATCH = 10_000;

/** `npm start` running in a process group of its own, the end of its output kept for a failure message. */
interface NpmStart {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  base: string;
}

/**
 * `npm start` as a user runs it: a process group of its own (as a terminal gives it), stopped with
 * a Ctrl-C (SIGINT to the group) when the run ends. For a diagnosis, BENCH_SERVICE_NODE_OPTIONS is
 * the service's NODE_OPTIONS (`--cpu-prof --cpu-prof-dir=/tmp/prof`, `--import=<a preload>`) and
 * BENCH_SERVICE_LOG a file its whole output is written to.
 */
async function npmStart(bench: Bench, env: Record<string, string>, port: number): Promise<NpmStart> {
  const nodeOptions = process.env.BENCH_SERVICE_NODE_OPTIONS;
  const child = spawn('npm', ['start'], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
      // No check for a newer npm: it would ask the registry.
      npm_config_update_notifier: 'false',
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
      ...env,
      PORT: String(port),
    },
    cwd: process.cwd(),
    detached: true,
  });
  const log = process.env.BENCH_SERVICE_LOG ? createWriteStream(process.env.BENCH_SERVICE_LOG) : undefined;
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
    log?.write(chunk);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  bench.defer(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(-child.pid!, 'SIGINT'); // Ctrl-C: the service stops its embedded Postgres itself
      const stopped = await Promise.race([exited.then(() => true), sleep(60_000).then(() => false)]);
      if (!stopped) {
        console.log('npm start did not stop within 60 s of SIGINT; killing its process group');
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    }
    log?.end();
  });
  const started = performance.now();
  while (!output.includes('Press Ctrl-C to stop.')) {
    if (child.exitCode !== null) throw new Error(`npm start exited early:\n${output}`);
    if (secondsSince(started) > 180) throw new Error(`npm start printed no URLs within 180 s:\n${output}`);
    await sleep(100);
  }
  return { child, output: () => output, base: `http://127.0.0.1:${port}` };
}

/** Resident memory of a process in MB (VmRSS), undefined once it is gone. */
function residentMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** A process of the service's tree, by the group it is shown in. */
function label(_pid: number, comm: string, cmdline: string): string {
  if (comm === 'redis-server') return 'redis-server';
  if (comm === 'postgres') {
    if (!cmdline.startsWith('postgres: ')) return 'postgres: postmaster';
    // "postgres: <user> <database> <host>(<port>) <state>": a session; else a background process.
    if (/^postgres: \S+ \S+ (\[local\]|\S+\(\d+\)) /.test(cmdline)) return 'postgres: sessions';
    return `postgres: ${cmdline.slice('postgres: '.length).replace(/\d+/g, '').trim()}`;
  }
  if (comm === 'node' && cmdline.includes('src/main.ts')) return 'node';
  if (comm.startsWith('npm') || comm === 'sh') return 'npm and sh';
  return comm;
}

/**
 * Wallet addresses as the platform makes them: public keys of fresh ed25519 key pairs (~0.1 ms
 * each with node:crypto). Not just any 32 random bytes: half of those are off the curve, which an
 * associated token account refuses as its owner (no custodial wallet is one).
 */
function walletAddresses(n: number): string[] {
  return Array.from({ length: n }, () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    // An Ed25519 SubjectPublicKeyInfo in DER ends with the 32 bytes of the key.
    return bs58.encode(publicKey.export({ format: 'der', type: 'spki' }).subarray(-32));
  });
}

async function count(client: pg.Client, query: string): Promise<number> {
  const { rows } = await client.query<{ n: string }>(query);
  return Number(rows[0]!.n);
}

/** ledgerfeed_block_follower_followed_accounts from /metrics, or undefined when not there yet. */
async function followedAccountsMetric(base: string): Promise<number | undefined> {
  try {
    const text = await (await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    const match = /^ledgerfeed_block_follower_followed_accounts(?:\{[^}]*\})? (\d+)/m.exec(text);
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

interface Counters {
  transactions: number;
  redisByCommand: Map<string, number>;
}

async function counters(client: pg.Client, redis: Redis): Promise<Counters> {
  const transactions = await count(
    client,
    `SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`,
  );
  const redisByCommand = new Map<string, number>();
  for (const match of (await redis.info('commandstats')).matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm))
    redisByCommand.set(match[1]!, Number(match[2]));
  return { transactions, redisByCommand };
}

const cores = (n: number) => n.toFixed(3);
const thousands = (n: number) => n.toLocaleString('en-US');

/** Where the follower is in taking in the wallets. */
const progress = ({
  queued,
  derived,
  metric,
}: {
  queued: number;
  derived: number;
  metric: number | undefined;
}) =>
  `follow_queue ${thousands(queued)} left, followed_token_accounts ${thousands(derived)}, ` +
  `ledgerfeed_block_follower_followed_accounts ${metric === undefined ? '-' : thousands(metric)}`;

async function main(bench: Bench): Promise<string> {
  const accounts = intSetting('BENCH_ACCOUNTS', 100_000, 0, 100);
  const settleSeconds = intSetting('BENCH_SETTLE_SECONDS', 60, 0, 1);
  const seconds = intSetting('BENCH_SECONDS', 30, 1, 2);
  const followLimit = intSetting('BENCH_FOLLOW_LIMIT_SECONDS', 600, 1);

  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ledgerfeed-bench-'));
  await chmod(dataDir, 0o755); // the embedded Postgres may run as the OS user `postgres`
  bench.defer(async () => {
    // Postgres left by a killed npm start (its owner gone), then the folder.
    await stopAbandonedServer(path.join(dataDir, 'postgres'), runsIn, 'SIGINT');
    await rm(dataDir, { recursive: true, force: true });
  });
  const redisServer = await spawnRedisServer({
    dir: path.join(dataDir, 'redis'),
    persistent: true,
    ownProcessGroup: true,
  });
  bench.defer(() => redisServer.stop());
  // Its pid, from the owner record spawnRedisServer writes beside its folder (abandoned-server.ts).
  const redisPid = (
    JSON.parse(readFileSync(ownerFileOf(path.join(dataDir, 'redis')), 'utf8')) as { server: number }
  ).server;
  console.log(
    `idle bench: npm start (every role) on ${dataDir}, its own redis-server (${redisServer.url}); ` +
      `${thousands(accounts)} accounts; settle ${settleSeconds} s, measure ${seconds} s`,
  );

  const generating = performance.now();
  const wallets = walletAddresses(accounts);
  console.log(
    `${thousands(accounts)} wallet key pairs generated in ${secondsSince(generating).toFixed(1)} s`,
  );

  const startedAt = performance.now();
  const service = await npmStart(
    bench,
    { DATA_DIR: dataDir, LOCALNET_PORT: String(await freePortPair()), REDIS_URL: redisServer.url },
    await freePort(),
  );
  const stack = JSON.parse(readFileSync(path.join(dataDir, 'stack.json'), 'utf8')) as { postgres: string };
  console.log(`npm start printed its URLs after ${secondsSince(startedAt).toFixed(1)} s`);

  const client = new pg.Client({ connectionString: stack.postgres });
  await client.connect();
  bench.defer(() => client.end());
  const ownSession = await count(client, 'SELECT pg_backend_pid() AS n');
  const redis = createRedis(redisServer.url, 'client');
  bench.defer(() => redis.disconnect());

  // Accounts go in once the follower follows blocks: before its cursor exists, wallets already in
  // Postgres make its start a per-address sweep over all of them (a one-off, not the idle state).
  const cursor = await pollUntil(
    () => count(client, 'SELECT count(*) AS n FROM block_follower_cursor'),
    (n) => n > 0,
    { everyMs: 250, limitMs: 60_000 },
  );
  if (!bench.check(cursor.held))
    throw new Error('the block follower wrote no cursor within 60 s of the start');

  const inserting = performance.now();
  for (let from = 0; from < accounts; from += INSERT_BATCH) {
    const batch = wallets.slice(from, from + INSERT_BATCH);
    await client.query(
      `INSERT INTO accounts (handle, display_name, wallet_address)
       SELECT 'idle_' || n, 'Idle ' || n, wallet
         FROM unnest($1::text[]) WITH ORDINALITY AS w (wallet, i), LATERAL (SELECT i + $2::int AS n) AS k`,
      [batch, from],
    );
  }
  console.log(
    `inserted ${thousands(accounts)} accounts with wallet addresses in ${secondsSince(inserting).toFixed(1)} s`,
  );

  // Taken in: the queue empty, every wallet's two token accounts derived, and the follower's gauge
  // steady over the last 3 readings (a second apart: 2-3 of its rounds, each loading what the one
  // before derived). The gauge counts the distinct 30-bit hashes the follower holds
  // (followed-accounts.ts), so collisions keep it a few below two per wallet (~19 expected among
  // 200,000): within 0.1% of it is all there. Progress every 5 s: 100,000 wallets take minutes.
  const tokenAccountsWanted = 2 * accounts;
  const recentGauges: Array<number | undefined> = [];
  let printedAt = performance.now();
  const followed = await pollUntil(
    async () => {
      const reading = {
        queued: await count(client, 'SELECT count(*) AS n FROM follow_queue'),
        derived: await count(client, 'SELECT count(*) AS n FROM followed_token_accounts'),
        metric: await followedAccountsMetric(service.base),
      };
      recentGauges.push(reading.metric);
      if (recentGauges.length > 3) recentGauges.shift();
      if (secondsSince(printedAt) >= 5) {
        printedAt = performance.now();
        console.log(`following: ${progress(reading)}`);
      }
      return reading;
    },
    ({ queued, derived, metric }) =>
      queued === 0 &&
      derived === tokenAccountsWanted &&
      metric !== undefined &&
      metric >= Math.floor(0.999 * tokenAccountsWanted) &&
      recentGauges.length === 3 &&
      recentGauges.every((gauge) => gauge === metric),
    { everyMs: 1_000, limitMs: followLimit * 1000 },
  );
  console.log(
    `${followed.held ? 'followed' : 'NOT followed'} after ${followed.seconds.toFixed(1)} s: ${progress(followed.value)}`,
  );
  if (!followed.held) {
    console.log(`npm start's output (its end):\n${service.output().slice(-6_000)}`);
    bench.problem(
      `the follower did not take in every wallet within ${followLimit} s (${thousands(tokenAccountsWanted)} token accounts wanted)`,
    );
  }

  if (settleSeconds > 0) {
    console.log(`settling ${settleSeconds} s (nothing read)`);
    await sleep(settleSeconds * 1000);
  }

  console.log(`measuring ${seconds} s (nothing read)`);
  const servicePid = [...readTree([service.child.pid!], label).processes.values()].find(
    (p) => p.label === 'node',
  )?.pid;
  const rssFrom = residentMb(servicePid);
  const roots = [service.child.pid!, redisPid];
  const exclude = new Set([ownSession]);
  const countersFrom = await counters(client, redis);
  const threadsFrom = servicePid ? processThreadCpu(servicePid) : new Map<string, number>();
  const machineFrom = cpuTimes();
  const benchFrom = process.cpuUsage();
  const from: TreeReading = readTree(roots, label, exclude);
  const windowFromUs = process.hrtime.bigint() / 1000n;
  await sleep(seconds * 1000);
  const to: TreeReading = readTree(roots, label, exclude);
  const windowToUs = process.hrtime.bigint() / 1000n;
  const rssTo = residentMb(servicePid);
  const benchCpu = process.cpuUsage(benchFrom);
  const machineTo = cpuTimes();
  const threadsTo = servicePid ? processThreadCpu(servicePid) : new Map<string, number>();
  const countersTo = await counters(client, redis);
  if (!bench.check(service.child.exitCode === null))
    bench.problem(`npm start exited during the run:\n${service.output()}`);

  const tree = treeCores(from, to);
  const window = tree.seconds;
  const machineCores =
    machineFrom && machineTo ? (machineTo.busy - machineFrom.busy) / 100 / window : Number.NaN;
  const group = (prefix: string) =>
    [...tree.byLabel].filter(
      ([name]) => name === prefix || name.startsWith(`${prefix} `) || name.startsWith(`${prefix}:`),
    );
  const sum = (rows: Array<[string, number]>) => rows.reduce((a, [, n]) => a + n, 0);
  const list = (rows: Array<[string, number]>) =>
    rows
      .filter(([, n]) => Math.abs(n) >= 0.0005)
      .sort((a, b) => b[1] - a[1])
      .map(
        ([name, n]) =>
          `${name.replace('postmaster (ended children)', 'ended (autovacuum workers, closed sessions)')} ${cores(n)}`,
      )
      .join(', ');
  const threads: Array<[string, number]> = [...threadsTo].map(([name, cpu]) => [
    name,
    (cpu - (threadsFrom.get(name) ?? 0)) / window,
  ]);

  console.log(
    `\n== the whole service idle, ${thousands(accounts)} followed accounts, ${window.toFixed(1)} s`,
  );
  console.log(
    `service process tree: ${cores(tree.total)} cores (npm, node, postgres, redis-server; /proc/<pid>/stat)`,
  );
  const node = group('node');
  console.log(
    `  node (the service, pid ${servicePid ?? '?'}): ${cores(sum(node))}; by thread: ${list(threads)}`,
  );
  const mb = (n: number | undefined) => (n === undefined ? '?' : `${n.toFixed(0)} MB`);
  // A fall means a major garbage collection ran in the window (after taking in many wallets, the
  // first one frees what their derivation left and costs a few hundred ms of the main thread).
  console.log(`  node resident memory ${mb(rssFrom)} at the start, ${mb(rssTo)} at the end`);
  const postgres = group('postgres');
  console.log(`  postgres: ${cores(sum(postgres))}; ${list(postgres)}`);
  console.log(`  redis-server: ${cores(sum(group('redis-server')))}`);
  const others = [...tree.byLabel].filter(
    ([name]) => ![...node, ...postgres, ...group('redis-server')].some(([shown]) => shown === name),
  );
  if (others.length > 0) console.log(`  other: ${list(others)}`);
  console.log(
    `machine: ${cores(machineCores)} cores busy (every process on the machine, others' included; ` +
      `${describeCpu(machineFrom, machineTo)}); the bench itself ${cores((benchCpu.user + benchCpu.system) / 1e6 / window)} cores`,
  );
  const redisRates = [...countersTo.redisByCommand]
    .map(([name, n]): [string, number] => [name, (n - (countersFrom.redisByCommand.get(name) ?? 0)) / window])
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1]);
  console.log(
    `Postgres ${((countersTo.transactions - countersFrom.transactions) / window).toFixed(1)} transactions/s; ` +
      `Redis ${sum(redisRates).toFixed(1)} commands/s (${redisRates.map(([name, n]) => `${name} ${n.toFixed(1)}`).join(', ')})`,
  );
  const met = tree.total <= TARGET_CORES;
  console.log(
    // Four decimals here: a figure just above the mark must not print as 0.100 beside a FAIL.
    `${bench.target(met)} whole service idle ${tree.total.toFixed(4)} cores <= ${TARGET_CORES} ` +
      `(${thousands(accounts)} followed accounts; machine ${cores(machineCores)})`,
  );
  // To cut a profile of the service (BENCH_SERVICE_NODE_OPTIONS=--cpu-prof) to the window.
  console.log(`window on the monotonic clock (a --cpu-prof profile's): ${windowFromUs} to ${windowToUs} µs`);
  console.log('');
  return `idle with ${thousands(accounts)} followed accounts`;
}

runBench(main);
