/**
 * What a paid post costs the machine, everything included (issue 40):
 *
 *   npm run bench:write-cost
 *
 * The whole service (roles api, worker and indexer, as `npm start` runs them) on a fresh embedded
 * stack; a writer child pays posts through the API at a fixed rate. For each rate of BENCH_RATES
 * (posts/s, default `50,200`): wait until the service is quiet (every earlier post finalized and
 * reconciled at finalized), measure the idle rate for BENCH_IDLE_SECONDS (10), pay posts for
 * BENCH_SECONDS (20), then wait until every post of the window is confirmed, reconciled (at
 * confirmed) and shipped to ClickHouse and its events numbered. The machine's CPU (/proc/stat,
 * every process) over load + drain, minus the idle rate over the same time and minus the writer
 * child's own CPU, divided by the posts: **machine milliseconds per paid post**. It also prints the
 * split by thread of the service's process (main, lf-payments, lf-localnet, V8's and ClickHouse's
 * helpers) and by other process (postgres, redis-server), each above its own idle rate, and the
 * Postgres transactions and Redis commands per post.
 *
 * Before the first rate, BENCH_WARMUP_SECONDS (10) at that rate, not counted: a fresh process runs
 * its hot paths unoptimized while V8 compiles them. No target here: issue 40's figure is a ratio
 * against the commit it started from, measured back to back (docs/benchmarks.md). A post not
 * answered 2xx, or a drain that does not end within BENCH_DRAIN_LIMIT_SECONDS (120), exits 1.
 * A smoke run (BENCH_SMOKE=1): one rate of 2/s, 1 s windows, no warm-up.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Redis } from 'ioredis';
import { createRedis } from '../src/adapters/redis/index.js';
import type { RunningService } from '../src/service.js';
import { intSetting, listSetting, rolesSetting, sized, wholeNumber } from './bench-settings.js';
import { startFundedWriter, writeFor, writeProblems } from './bench-writer.js';
import { pollUntil } from './clock.js';
import { cpuTimes } from './machine-cpu.js';
import type { Writer } from './read-writer.js';
import { runBench, type Bench } from './runner.js';
import { pidCpuSeconds, processCpuSeconds, threadCpuSeconds } from './thread-cpu.js';

/** Every CPU figure of one reading, in seconds since boot (the machine's: busy ticks / USER_HZ). */
interface Reading {
  at: number;
  machine: number;
  writer: number;
  threads: Map<string, number>;
  processes: Map<string, number>;
  transactions: number;
  redisCommands: number;
  /** Redis calls by command (INFO commandstats, which counts the commands Lua scripts run). */
  redisByCommand: Map<string, number>;
  /** HTTP requests the localnet served, and its JSON-RPC calls by method (localnet_traffic). */
  rpcRequests: number;
  rpcByMethod: Map<string, number>;
}

async function reading(service: RunningService, redis: Redis, writerPid: number): Promise<Reading> {
  const { rows } = await sql<{ n: string }>`
    SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()`.execute(
    service.app.db,
  );
  const info = await redis.info('commandstats');
  const redisByCommand = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm))
    redisByCommand.set(match[1]!, Number(match[2]));
  const redisCommands = [...redisByCommand.values()].reduce((a, b) => a + b, 0);
  const processes = processCpuSeconds() ?? new Map<string, number>();
  // A localnet without localnet_traffic (an older commit, measured back to back) counts nothing.
  const traffic = await service.app.rpc
    .call<{ httpRequests: number; calls: Record<string, number> }>('localnet_traffic', [])
    .catch(() => ({ httpRequests: Number.NaN, calls: {} }));
  return {
    at: performance.now() / 1000,
    machine: (cpuTimes()?.busy ?? 0) / 100,
    writer: pidCpuSeconds(writerPid),
    threads: threadCpuSeconds() ?? new Map<string, number>(),
    processes,
    transactions: Number(rows[0]!.n),
    redisCommands,
    redisByCommand,
    rpcRequests: traffic.httpRequests,
    rpcByMethod: new Map(Object.entries(traffic.calls)),
  };
}

/** Cores (CPU seconds per second) between two readings: the machine less the writer, and by name. */
function rates(from: Reading, to: Reading) {
  const seconds = to.at - from.at;
  const per = (a: Map<string, number>, b: Map<string, number>) =>
    new Map([...b].map(([name, cpu]) => [name, (cpu - (a.get(name) ?? 0)) / seconds]));
  const processes = per(from.processes, to.processes);
  // The writer is a `node` process: its CPU is not the service's.
  processes.set('node', (processes.get('node') ?? 0) - (to.writer - from.writer) / seconds);
  return {
    seconds,
    machine: (to.machine - from.machine - (to.writer - from.writer)) / seconds,
    threads: per(from.threads, to.threads),
    processes,
    transactions: (to.transactions - from.transactions) / seconds,
    redisCommands: (to.redisCommands - from.redisCommands) / seconds,
    redisByCommand: per(from.redisByCommand, to.redisByCommand),
    rpcRequests: (to.rpcRequests - from.rpcRequests) / seconds,
    rpcByMethod: per(from.rpcByMethod, to.rpcByMethod),
  };
}

/** What still waits, for the posts the writer paid (outbox rows from `since`): each count must reach 0. */
interface Backlog {
  unconfirmed: number;
  unreconciled: number;
  unfinalized: number;
  unshipped: number;
  unsequenced: number;
}

async function backlog(service: RunningService, since: Date): Promise<Backlog> {
  const { rows } = await sql<Backlog>`
    SELECT
      (SELECT count(*)::int FROM chain_transactions
        WHERE created_at >= ${since} AND status IN ('signed', 'sent')) AS unconfirmed,
      (SELECT count(*)::int FROM chain_transactions
        WHERE created_at >= ${since} AND reconciled_commitment IS NULL) AS unreconciled,
      (SELECT count(*)::int FROM chain_transactions
        WHERE created_at >= ${since}
          AND (status <> 'finalized' OR reconciled_commitment IS DISTINCT FROM 'finalized')) AS unfinalized,
      (SELECT count(*)::int FROM domain_events e, shipper_cursors c
        WHERE c.stream = 'events' AND (e.txid, e.seq) > (c.last_txid, c.last_seq)) +
      (SELECT count(*)::int FROM ledger_legs l, shipper_cursors c
        WHERE c.stream = 'legs' AND (l.txid, l.id) > (c.last_txid, c.last_seq)) AS unshipped,
      (SELECT count(*)::int FROM event_staging) AS unsequenced`.execute(service.app.db);
  return rows[0]!;
}

/** Waits until `done` holds (checked every 250 ms) or `limitSeconds` pass; whether it held. */
async function waitUntil(
  service: RunningService,
  since: Date,
  done: (left: Backlog) => boolean,
  limitSeconds: number,
): Promise<boolean> {
  const { value, held } = await pollUntil(() => backlog(service, since), done, {
    everyMs: 250,
    limitMs: limitSeconds * 1000,
  });
  if (!held) console.log(`still waiting after ${limitSeconds} s: ${JSON.stringify(value)}`);
  return held;
}

const drained = (left: Backlog) =>
  left.unconfirmed === 0 && left.unreconciled === 0 && left.unshipped === 0 && left.unsequenced === 0;

async function payFor(bench: Bench, writer: Writer, postsPerSecond: number, seconds: number): Promise<void> {
  const result = await writeFor(writer, { postsPerSecond, likesPerSecond: 0 }, seconds);
  writeProblems(`${postsPerSecond}/s`, result).forEach(bench.problem);
}

const ms = (cores: number, perSecond: number) => ((1000 * cores) / perSecond).toFixed(2);

async function main(bench: Bench): Promise<string> {
  const postRates = listSetting('BENCH_RATES', '50,200', (item) => wholeNumber(item, 1), '2');
  const seconds = intSetting('BENCH_SECONDS', 20, 1, 1);
  const idleSeconds = intSetting('BENCH_IDLE_SECONDS', 10, 1, 1);
  const warmupSeconds = intSetting('BENCH_WARMUP_SECONDS', 10, 0, 0);
  const drainLimit = intSetting('BENCH_DRAIN_LIMIT_SECONDS', 120, 1);
  // BENCH_ROLES (api,worker,indexer): leave a role out to see what it costs.
  const roles = rolesSetting('api,worker,indexer');
  const service = await bench.startService(roles);
  const redis = createRedis(service.app.stack.redis.url, 'client');
  bench.defer(() => redis.disconnect());
  // No seed of posts: its outbox rows were never sent, and the reconciler would look for them
  // on chain every round (they stay `missing`), a cost that is not the writer's.
  const writer = await startFundedWriter(service, { posters: sized(40, 2), likers: 0, tag: 'wc' });
  bench.defer(writer.close);
  const since = new Date();
  console.log(
    `write-cost bench: roles ${roles.join('+')}, paid posts at ${postRates.join(' and ')}/s for ${seconds} s ` +
      `each, then the drain (confirmed, reconciled, shipped); idle ${idleSeconds} s before each; Redis ${service.app.stack.redis.source}`,
  );
  if (warmupSeconds > 0) {
    await payFor(bench, writer, postRates[0]!, warmupSeconds);
    if (!(await waitUntil(service, since, drained, drainLimit))) bench.problem('the warm-up did not drain');
  }
  for (const rate of postRates) {
    // Quiet: the earlier posts' finalization and its reconciliation are done, so the idle
    // reading is idle and the window pays for its own posts only.
    console.log(`${rate}/s: waiting until the service is quiet, then ${idleSeconds} s idle`);
    const quiet = await waitUntil(service, since, (left) => left.unfinalized === 0 && drained(left), 90);
    if (!quiet)
      console.log('(the service did not become quiet within 90 s: the idle rate includes that work)');
    const idleFrom = await reading(service, redis, writer.pid);
    await sleep(idleSeconds * 1000);
    const idleTo = await reading(service, redis, writer.pid);
    const idle = rates(idleFrom, idleTo);

    console.log(`${rate}/s: paying posts for ${seconds} s, then the drain`);
    const from = await reading(service, redis, writer.pid);
    await payFor(bench, writer, rate, seconds);
    const drainedInTime = await waitUntil(service, since, drained, drainLimit);
    const to = await reading(service, redis, writer.pid);
    if (!drainedInTime) bench.problem(`${rate}/s: the posts were not all confirmed, reconciled and shipped`);
    const load = rates(from, to);
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM chain_transactions
       WHERE created_at >= now() - make_interval(secs => ${load.seconds + 1})`.execute(service.app.db);
    const posts = rows[0]!.n;
    const perSecond = posts / load.seconds;
    const above = (cores: number, idleCores = 0) => ms(cores - idleCores, perSecond);

    console.log(`\n== ${rate} paid posts/s: ${posts} posts, load + drain ${load.seconds.toFixed(1)} s`);
    console.log(
      `machine: ${load.machine.toFixed(3)} cores busy without the writer (idle ${idle.machine.toFixed(3)}); ` +
        `writer child ${ms((to.writer - from.writer) / load.seconds, perSecond)} ms per post (not counted)`,
    );
    const split = (label: string, now: Map<string, number>, before: Map<string, number>) =>
      `${label}: ` +
      [...now]
        .map(([name, cores]): [string, number] => [name, cores - (before.get(name) ?? 0)])
        .filter(([, cores]) => Math.abs(cores) >= 0.002)
        .sort((a, b) => b[1] - a[1])
        .map(([name, cores]) => `${name} ${ms(cores, perSecond)}`)
        .join(', ');
    console.log(split('service threads, ms per post above idle', load.threads, idle.threads));
    console.log(split('other processes, ms per post above idle', load.processes, idle.processes));
    console.log(
      `per post: Postgres ${((load.transactions - idle.transactions) / perSecond).toFixed(1)} transactions, ` +
        `Redis ${((load.redisCommands - idle.redisCommands) / perSecond).toFixed(1)} commands`,
    );
    const commands = [...load.redisByCommand]
      .map(([name, n]): [string, number] => [name, (n - (idle.redisByCommand.get(name) ?? 0)) / perSecond])
      .filter(([, n]) => n >= 0.5)
      .sort((a, b) => b[1] - a[1]);
    console.log(
      `Redis commands per post: ${commands.map(([name, n]) => `${name} ${n.toFixed(1)}`).join(', ')}`,
    );
    const calls = [...load.rpcByMethod]
      .map(([name, n]): [string, number] => [name, (n - (idle.rpcByMethod.get(name) ?? 0)) / perSecond])
      .filter(([, n]) => n >= 0.01)
      .sort((a, b) => b[1] - a[1]);
    console.log(
      `RPC per post: ${((load.rpcRequests - idle.rpcRequests) / perSecond).toFixed(2)} HTTP requests carrying ` +
        `${calls.reduce((sum, [, n]) => sum + n, 0).toFixed(2)} calls (${calls.map(([name, n]) => `${name} ${n.toFixed(2)}`).join(', ')})`,
    );
    console.log(`RESULT ${rate}/s: ${above(load.machine, idle.machine)} ms of machine CPU per paid post`);
  }
  console.log('');
  return 'write-cost (every post answered 2xx and drained)';
}

runBench(main);
