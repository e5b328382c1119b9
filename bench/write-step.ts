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
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { RunningService } from '../src/service.js';
import { intSetting, sized, SMOKE } from './bench-settings.js';
import { runBench, startBenchService } from './bench-service.js';
import { settlePayments, startFundedWriter, writeLevels } from './bench-writer.js';
import { cpuTimes, describeCpu } from './machine-cpu.js';
import { seedReadData } from './read-seed.js';
import type { WriteRates } from './read-writer.js';

function readSettings() {
  const rates: Record<string, WriteRates> = writeLevels();
  const names = (
    process.env.BENCH_STEP_PLAN ?? (SMOKE ? 'low,low' : 'low,low,high,high,low,low,low,high,high')
  ).split(',');
  const plan = names.map((name) => {
    const level = rates[name.trim()];
    if (!level) throw new Error(`BENCH_STEP_PLAN: ${JSON.stringify(name)} is neither low nor high`);
    return { name: name.trim(), rates: level };
  });
  return { plan, seconds: intSetting('BENCH_SECONDS', 9, 1, 1) };
}

async function connections(service: RunningService): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`.execute(service.app.db);
  return rows[0]!.n;
}

const ms = (value: number | null) => (value === null ? '-' : value.toFixed(0));

async function main(): Promise<number> {
  const settings = readSettings();
  const { service, stop } = await startBenchService(['api', 'worker']);
  try {
    await seedReadData(service, { posts: sized(2_000, 500), authors: sized(20, 5), tag: 'step' });
    const writer = await startFundedWriter(service, {
      posters: sized(40, 2),
      likers: sized(200, 5),
      tag: 'step',
    });
    // No target, but a check: every window's writes answered 2xx.
    const problems: string[] = [];
    try {
      console.log(
        `write-step bench: roles api+worker, nothing read; windows of ${settings.seconds} s, each after the payments backlog settled`,
      );
      for (const [i, window] of settings.plan.entries()) {
        const settled = await settlePayments(service);
        const before = await connections(service);
        const cpuAtStart = cpuTimes();
        await writer.start(window.rates, 0);
        await sleep(settings.seconds * 1000);
        const writes = await writer.stop();
        const after = await connections(service);
        for (const [kind, result] of [
          ['posts', writes.posts],
          ['likes', writes.likes],
        ] as const) {
          if (result.ok !== result.sent) {
            problems.push(
              `window ${i + 1}: ${result.ok} of ${result.sent} ${kind} answered 2xx` +
                result.other.map(([outcome, n]) => `; ${n} x ${outcome}`).join(''),
            );
          }
        }
        console.log(
          `${String(i + 1).padStart(2)} ${window.name.padEnd(4)} ${window.rates.postsPerSecond} + ${window.rates.likesPerSecond}/s:` +
            ` posts p50 ${ms(writes.posts.p50Ms)} ms p99 ${ms(writes.posts.p99Ms)} ms,` +
            ` likes p50 ${ms(writes.likes.p50Ms)} ms p99 ${ms(writes.likes.p99Ms)} ms,` +
            ` ${writes.inFlightMax} in flight at most; Postgres connections ${before} -> ${after}` +
            ` (backlog settled in ${settled.seconds.toFixed(1)} s); ${describeCpu(cpuAtStart, cpuTimes())}`,
        );
      }
      for (const problem of problems) console.log(`! ${problem}`);
      console.log(`${problems.length === 0 ? 'PASS' : 'FAIL'}: write-step (every write answered 2xx)`);
      return problems.length === 0 ? 0 : 1;
    } finally {
      await writer.close();
    }
  } finally {
    await stop();
  }
}

runBench(main);
