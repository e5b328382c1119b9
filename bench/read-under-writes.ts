/**
 * Benchmark of issue 21 item 5: the feed read while money moves.
 *
 *   npm run bench:read-under-writes
 *
 * The service (roles api and worker, as BENCH_ROLES, read caches on, rate limits off) runs in this
 * process on a fresh embedded stack: Postgres, Redis, chdb and the localnet. Setup (not timed):
 * BENCH_POSTS posts with replies, likes, reposts and some failed payments written straight into
 * Postgres (bench/read-seed.ts); BENCH_POSTERS accounts funded on chain to pay posts; BENCH_LIKERS
 * accounts to like.
 *
 * Every route (REST latest, REST trending, GraphQL feed LATEST, 20 items) is measured with 50
 * connections (autocannon in a child process) for BENCH_SECONDS, right after a plain node:http
 * server answering the very bytes the route answered just before, with the same client settings
 * and the same requests:
 *
 *   1. caches on, nothing written (compare with bench:feed; its targets apply);
 *   2. while the writer pays BENCH_LOW_POSTS posts/s and likes BENCH_LOW_LIKES posts/s
 *      (default 20 + 100): REST >= 40% of plain, GraphQL >= 25%, p99 < 50 ms, 0 non-2xx, every
 *      write answered 2xx;
 *   3. while it writes BENCH_HIGH_POSTS + BENCH_HIGH_LIKES (default 100 + 300): REST >= 20%,
 *      GraphQL >= 12%, p99 < 100 ms (0 non-2xx reads; writes printed, no target on their answers).
 *
 * The writer is a child process of its own (bench/read-writer.ts), an open loop through the real
 * API: paid posts go through the ledger, the outbox and the localnet. It starts BENCH_LEAD_MS
 * before the readers and stops when they stop; its writes of that window are printed beside the
 * reads: sent, answered 2xx, and the rate achieved (2xx answered inside the window, per second).
 * The phase fails when the writer fell behind its schedule (a request more than 1 s late) or the
 * service did (under 90% of the offered rate answered 2xx inside the window: the rest queued):
 * then the stated load was offered but not served. The plain server is measured with nothing written, the machine's ceiling
 * (the targets' base); for information it is measured again under the same writes. Between
 * measurements the payments backlog settles (no outbox row left unsent). First, not counted, each
 * route is read for BENCH_WARMUP_SECONDS, and as long again at the start of each level that writes
 * while the writer runs at that level's rate (a step up in load is measured by bench/write-step.ts,
 * not here). A missed target exits 1.
 */
import os from 'node:os';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { intSetting, rolesSetting, SMOKE } from './bench-settings.js';
import { settlePayments, startFundedWriter, writeLevels } from './bench-writer.js';
import { secondsSince } from './clock.js';
import { feedRoutes } from './feed-routes.js';
import { allAnswered2xx, CONNECTIONS, load, plainCeiling, warmUp, type Load } from './http-load.js';
import { cpuTimes, describeCpu } from './machine-cpu.js';
import { samplePgActivity } from './pg-activity.js';
import { seedReadData } from './read-seed.js';
import type { WriteKindResult, WriteRates, WriteResult } from './read-writer.js';
import { runBench, type Bench } from './runner.js';
import { formatMs as ms } from './stats.js';

/** The writer fell behind when a request went out later than this. */
const MAX_LAG_MS = 1_000;
/** The service fell behind when it answered 2xx to less than this share of the offered rate in the window. */
const MIN_ACHIEVED_SHARE = 0.9;

interface Targets {
  restRatio: number;
  graphqlRatio: number;
  p99Ms: number;
  /** The low level requires every write answered 2xx; the high one only prints them. */
  every2xx: boolean;
}

interface Phase {
  label: string;
  rates?: WriteRates;
  targets: Targets;
}

function readSettings() {
  return {
    // The worker role confirms the payments.
    roles: rolesSetting('api,worker', ['api', 'worker']),
    posts: intSetting('BENCH_POSTS', 2_000, 500, 500),
    authors: intSetting('BENCH_AUTHORS', 20, 2, 5),
    seconds: intSetting('BENCH_SECONDS', 8, 1, 1),
    posters: intSetting('BENCH_POSTERS', 40, 1, 2),
    likers: intSetting('BENCH_LIKERS', 200, 1, 5),
    leadMs: intSetting('BENCH_LEAD_MS', 1_000, 0, 200),
    warmupSeconds: intSetting('BENCH_WARMUP_SECONDS', 3, 0, 0),
    ...writeLevels(),
  };
}

const rate = (n: number, seconds: number) => (n / seconds).toFixed(1);

function describeWrites(kind: string, result: WriteKindResult, target: number, seconds: number): string {
  const other = result.other.reduce((sum, [, n]) => sum + n, 0);
  return (
    `${kind}: ${result.sent} sent (${result.due} due), ${result.ok} answered 2xx` +
    (result.pending > 0 ? ` (${result.pending} of them 202 pending)` : '') +
    (other > 0 ? `, ${other} not 2xx` : '') +
    `; ${result.okInWindow} answered 2xx while the readers ran = ${rate(result.okInWindow, seconds)}/s` +
    ` of ${target}/s offered; p50 ${ms(result.p50Ms)} ms, p99 ${ms(result.p99Ms)} ms`
  );
}

/**
 * The writer kept its schedule (nothing went out more than MAX_LAG_MS late); the service kept up
 * (from the end of the lead to the stop, while the readers ran, it answered 2xx at least
 * MIN_ACHIEVED_SHARE of the offered rate: what it answered only later had queued); every write
 * answered 2xx.
 */
function judgeWrites(result: WriteResult): {
  writerKeptUp: boolean;
  serviceKeptUp: boolean;
  all2xx: boolean;
} {
  const achieved = (kind: WriteKindResult, target: number) =>
    target === 0 || kind.okInWindow / result.steadySeconds >= MIN_ACHIEVED_SHARE * target;
  const all2xx = [result.posts, result.likes].every((kind) => kind.ok === kind.sent && kind.sent >= kind.due);
  return {
    writerKeptUp: result.lagMaxMs <= MAX_LAG_MS,
    serviceKeptUp:
      achieved(result.posts, result.rates.postsPerSecond) &&
      achieved(result.likes, result.rates.likesPerSecond),
    all2xx,
  };
}

async function main(bench: Bench): Promise<string> {
  const settings = readSettings();
  const setupStarted = performance.now();
  const service = await bench.startService(settings.roles);
  const { app } = service;
  const base = service.apiUrl!;
  const seed = await seedReadData(service, {
    posts: settings.posts,
    authors: settings.authors,
    tag: 'ruw',
  });
  const writer = await startFundedWriter(service, {
    posters: settings.posters,
    likers: settings.likers,
    tag: 'ruw',
  });
  bench.defer(writer.close);

  const routes = feedRoutes(base, seed.readKey);
  const phases: Phase[] = [
    {
      label: 'caches on, nothing written',
      targets: { restRatio: 0.4, graphqlRatio: 0.25, p99Ms: 50, every2xx: true },
    },
    {
      label: `${settings.low.postsPerSecond} paid posts/s + ${settings.low.likesPerSecond} likes/s`,
      rates: settings.low,
      targets: { restRatio: 0.4, graphqlRatio: 0.25, p99Ms: 50, every2xx: true },
    },
    {
      label: `${settings.high.postsPerSecond} paid posts/s + ${settings.high.likesPerSecond} likes/s`,
      rates: settings.high,
      targets: { restRatio: 0.2, graphqlRatio: 0.12, p99Ms: 100, every2xx: false },
    },
  ];

  // Warm-up (not counted): the reads run hot before anything is measured. Each writing level
  // warms its own write path below, at its own rate.
  await warmUp(routes, settings.warmupSeconds);
  const warm = await settlePayments(service);
  console.log(
    `read-under-writes bench: ${os.cpus().length} cores, roles ${settings.roles.join('+')}, ${seed.posts} posts +` +
      ` ${seed.replies} replies, ${seed.likes} likes, ${seed.reposts} reposts, ${seed.failed} failed payments;` +
      ` ${settings.posters} funded posters, ${settings.likers} likers; ${CONNECTIONS} reading connections,` +
      ` ${settings.seconds} s per run; read caches on (READ_CACHE_TTL_MS ${app.config.READ_CACHE_TTL_MS})` +
      ` (setup ${secondsSince(setupStarted).toFixed(0)} s, warm-up backlog settled in ${warm.seconds.toFixed(1)} s)`,
  );
  console.log(
    "the plain server is measured with nothing written (the machine's ceiling); writes run only beside the route",
  );

  // A level set to 0 + 0 writes nothing: it is the first phase again, skipped.
  const writing = (phase: Phase) =>
    !phase.rates || phase.rates.postsPerSecond + phase.rates.likesPerSecond > 0;
  for (const phase of phases.filter(writing)) {
    console.log('');
    console.log(`== ${phase.label}`);
    // A level's writes warm up at its own rate, with the reads, before its first route: the
    // first seconds after a step up in load are a transient (the Postgres connections the lower
    // rate never needed are opened and planned cold: docs/benchmarks.md), not the steady state
    // the targets are about. bench/write-step.ts measures that step on its own.
    if (phase.rates && settings.warmupSeconds > 0) {
      await settlePayments(service);
      await writer.start(phase.rates, 0);
      await warmUp(routes, settings.warmupSeconds);
      await writer.stop();
    }
    for (const route of routes) {
      const backlog = phase.rates ? await settlePayments(service) : undefined;
      if (backlog && backlog.left > 0)
        console.log(`   ! ${backlog.left} payments still unsent after a minute of waiting`);
      // The same requests (method, headers, body) as the route gets: the same client work.
      const { bytes, ceiling, plain } = await plainCeiling(
        route.name,
        route,
        settings.seconds,
        route.options,
      );

      const cpuAtStart = cpuTimes();
      // The service runs in this process: its event loop's delays tell a CPU-bound service (long
      // delays) from one whose requests wait on Postgres or Redis (short delays, slow answers).
      const loopDelay = monitorEventLoopDelay({ resolution: 10 });
      loopDelay.enable();
      const pgActivity = await samplePgActivity(app.stack.postgres.url);
      let writes: WriteResult | undefined;
      let measured: Load;
      if (phase.rates) {
        await writer.start(phase.rates, settings.leadMs);
        await sleep(settings.leadMs);
        measured = await load(route.url, settings.seconds, route.options);
        writes = await writer.stop();
      } else {
        measured = await load(route.url, settings.seconds, route.options);
      }
      loopDelay.disable();
      // For information, not the target: the plain server again, while the service does the
      // same writes. It tells what the writes take from the machine (the sockets of both
      // sides, Postgres, the localnet) from what they take from the read path itself. Not in a
      // smoke run, whose figures inform nobody.
      let plainUnderWrites: Load | undefined;
      if (phase.rates && !SMOKE) {
        await settlePayments(service);
        await writer.start(phase.rates, settings.leadMs);
        await sleep(settings.leadMs);
        plainUnderWrites = await load(plain.url, settings.seconds, route.options);
        await writer.stop();
      }
      await plain.close();
      const sessions = await pgActivity.stop();
      const cpu =
        describeCpu(cpuAtStart, cpuTimes()) +
        `; service event loop delay p50 ${(loopDelay.percentile(50) / 1e6).toFixed(0)} ms,` +
        ` p99 ${(loopDelay.percentile(99) / 1e6).toFixed(0)} ms, max ${(loopDelay.max / 1e6).toFixed(0)} ms`;

      const target = route.graphql ? phase.targets.graphqlRatio : phase.targets.restRatio;
      const ratio = measured.requestsPerSecond / ceiling.requestsPerSecond;
      // Latencies are of answered reads only: a run where none answered has no p99 to show.
      const stalled = measured.answered === 0;
      // Checks apart from targets: reads answered 2xx, writes too where the level asks it (every
      // level in a smoke run: its rates overload nothing).
      const readsMet = ratio >= target && measured.p99Ms < phase.targets.p99Ms;
      const judged = writes ? judgeWrites(writes) : undefined;
      const writesChecked = !judged || judged.all2xx || (!phase.targets.every2xx && !SMOKE);
      const writesMet = !judged || (judged.writerKeptUp && judged.serviceKeptUp);
      console.log(
        `${bench.mark(allAnswered2xx(measured), readsMet)} ${route.name.padEnd(25)} ${measured.requestsPerSecond.toFixed(0).padStart(6)} req/s` +
          ` = ${(ratio * 100).toFixed(1)}% of plain ${ceiling.requestsPerSecond.toFixed(0)} (target >= ${target * 100}%),` +
          ` p50 ${measured.p50Ms} ms, p99 ${measured.p99Ms} ms (target < ${phase.targets.p99Ms}),` +
          ` ${measured.non2xx} non-2xx, ${measured.errors} errors (target 0), ${bytes.length} bytes` +
          (stalled ? `; NO read answered within the run (${measured.sent} sent)` : ''),
      );
      if (writes && judged) {
        const r = writes.rates;
        console.log(
          `${bench.mark(writesChecked, writesMet)}   writes, window of ${writes.seconds.toFixed(1)} s (lead, reads, stop);` +
            ` target ${phase.targets.every2xx ? 'the offered rate, every write 2xx' : 'the offered rate (no target on answers)'}`,
        );
        console.log(
          `       ${describeWrites('posts', writes.posts, r.postsPerSecond, writes.steadySeconds)}`,
        );
        console.log(
          `       ${describeWrites('likes', writes.likes, r.likesPerSecond, writes.steadySeconds)}`,
        );
        console.log(
          `       writer ${judged.writerKeptUp ? 'kept its schedule' : 'FELL BEHIND its schedule'}` +
            ` (max lag ${writes.lagMaxMs.toFixed(0)} ms, ${writes.lateRequests} requests > 100 ms late);` +
            ` service ${judged.serviceKeptUp ? 'kept up' : `FELL BEHIND (under ${MIN_ACHIEVED_SHARE * 100}% of the offered rate answered while the readers ran)`}` +
            ` (${writes.inFlightMax} writes in flight at most, last answer ${writes.drainSeconds.toFixed(1)} s after the stop)` +
            (backlog ? `; payments backlog before the run settled in ${backlog.seconds.toFixed(1)} s` : ''),
        );
        for (const [outcome, n] of [...writes.posts.other, ...writes.likes.other].slice(0, 5)) {
          console.log(`       ! ${n} x ${outcome}`);
        }
      }
      if (plainUnderWrites) {
        console.log(
          `       for information: the plain server under the same writes ${plainUnderWrites.requestsPerSecond.toFixed(0)} req/s` +
            ` (${((plainUnderWrites.requestsPerSecond / ceiling.requestsPerSecond) * 100).toFixed(1)}% of it with nothing written);` +
            ` the route = ${((measured.requestsPerSecond / plainUnderWrites.requestsPerSecond) * 100).toFixed(1)}% of it`,
        );
      }
      console.log(`       ${cpu}`);
      console.log(`       ${sessions}`);
    }
  }
  const after = await settlePayments(service);
  const { rows: outbox } = await sql<{ status: string; n: number }>`
    SELECT status, count(*)::int AS n FROM chain_transactions WHERE signature NOT LIKE 'seed-%'
     GROUP BY status ORDER BY status`.execute(app.db);
  console.log('');
  console.log(
    `outbox of the run's payments ${after.seconds.toFixed(1)} s after the last phase: ` +
      outbox.map((row) => `${row.n} ${row.status}`).join(', '),
  );
  // A check: the writer's posts were paid on chain, and none of those payments failed.
  const paid = outbox
    .filter((row) => row.status === 'confirmed' || row.status === 'finalized')
    .reduce((a, row) => a + row.n, 0);
  const failed = outbox.find((row) => row.status === 'failed')?.n ?? 0;
  if (paid === 0 || failed > 0) {
    bench.problem(`${paid} of the run's payments confirmed, ${failed} failed`);
  }
  return 'read-under-writes';
}

runBench(main);
