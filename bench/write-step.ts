/**
 * What the write path does in the first seconds after its load steps up (issue 21), nothing read.
 *
 *   npm run bench:write-step
 *
 * The service (roles api and worker) and the writer child of bench:read-under-writes, on a fresh
 * embedded stack. Windows of BENCH_SECONDS at the rates BENCH_STEP_PLAN names, each after the
 * payments backlog settled; each prints its writes' p50/p99, the most in flight, the service's
 * Postgres connections at its start and end, and the machine's CPU. The default plan steps up
 * twice, the second time after three quiet windows (longer than pg's default idle timeout), so a
 * pool that closes idle connections meets the second step cold again. No target: see
 * bench/README.md and docs/benchmarks.md. A write not answered 2xx exits 1. A smoke run
 * (BENCH_SMOKE=1): two windows of 1 s at the low level (2 + 5), 500 posts, 2 posters, 5 likers.
 */
import { sql } from 'kysely';
import type { RunningService } from '../src/service.js';
import { intSetting, listSetting, sized } from './bench-settings.js';
import { settlePayments, startFundedWriter, writeFor, writeLevels, writeProblems } from './bench-writer.js';
import { cpuTimes, describeCpu } from './machine-cpu.js';
import { seedReadData } from './read-seed.js';
import type { WriteRates } from './read-writer.js';
import { runBench } from './runner.js';
import { formatMs as ms } from './stats.js';

async function connections(service: RunningService): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`.execute(service.app.db);
  return rows[0]!.n;
}

runBench(async (bench) => {
  const levels: Record<string, WriteRates> = writeLevels();
  const plan = listSetting(
    'BENCH_STEP_PLAN',
    'low,low,high,high,low,low,low,high,high',
    (name) => (levels[name] ? { name, rates: levels[name] } : undefined),
    'low,low',
  );
  const seconds = intSetting('BENCH_SECONDS', 9, 1, 1);
  const service = await bench.startService(['api', 'worker']);
  await seedReadData(service, { posts: sized(2_000, 500), authors: sized(20, 5), tag: 'step' });
  const writer = await startFundedWriter(service, {
    posters: sized(40, 2),
    likers: sized(200, 5),
    tag: 'step',
  });
  bench.defer(writer.close);
  console.log(
    `write-step bench: roles api+worker, nothing read; windows of ${seconds} s, each after the payments backlog settled`,
  );
  for (const [i, window] of plan.entries()) {
    const settled = await settlePayments(service);
    const before = await connections(service);
    const cpuAtStart = cpuTimes();
    const writes = await writeFor(writer, window.rates, seconds);
    const after = await connections(service);
    // No target, but a check: every window's writes answered 2xx.
    writeProblems(`window ${i + 1}`, writes).forEach(bench.problem);
    console.log(
      `${String(i + 1).padStart(2)} ${window.name.padEnd(4)} ${window.rates.postsPerSecond} + ${window.rates.likesPerSecond}/s:` +
        ` posts p50 ${ms(writes.posts.p50Ms)} ms p99 ${ms(writes.posts.p99Ms)} ms,` +
        ` likes p50 ${ms(writes.likes.p50Ms)} ms p99 ${ms(writes.likes.p99Ms)} ms,` +
        ` ${writes.inFlightMax} in flight at most; Postgres connections ${before} -> ${after}` +
        ` (backlog settled in ${settled.seconds.toFixed(1)} s); ${describeCpu(cpuAtStart, cpuTimes())}`,
    );
  }
  return 'write-step (every write answered 2xx)';
});
