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
 * bench/README.md and docs/benchmarks.md.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import type { RunningService } from '../src/service.js';
import { intSetting } from './bench-settings.js';
import { runBench, startBenchService } from './bench-service.js';
import { fundedMembers } from './funded-accounts.js';
import { cpuTimes, describeCpu } from './machine-cpu.js';
import { seedReadData } from './read-seed.js';
import { startWriter, type WriteRates } from './read-writer.js';

const FUNDING_MICRO = 500_000_000n;

function readSettings() {
  const rates: Record<string, WriteRates> = {
    low: {
      postsPerSecond: intSetting('BENCH_LOW_POSTS', 20, 0),
      likesPerSecond: intSetting('BENCH_LOW_LIKES', 100, 0),
    },
    high: {
      postsPerSecond: intSetting('BENCH_HIGH_POSTS', 100, 0),
      likesPerSecond: intSetting('BENCH_HIGH_LIKES', 300, 0),
    },
  };
  const names = (process.env.BENCH_STEP_PLAN ?? 'low,low,high,high,low,low,low,high,high').split(',');
  const plan = names.map((name) => {
    const level = rates[name.trim()];
    if (!level) throw new Error(`BENCH_STEP_PLAN: ${JSON.stringify(name)} is neither low nor high`);
    return { name: name.trim(), rates: level };
  });
  return { plan, seconds: intSetting('BENCH_SECONDS', 9, 1) };
}

/** Seconds until no outbox row is left unsent (at most a minute). */
async function settle(service: RunningService): Promise<number> {
  const started = performance.now();
  for (;;) {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM chain_transactions WHERE status IN ('signed', 'sent')`.execute(
      service.app.db,
    );
    if (rows[0]!.n === 0 || performance.now() - started > 60_000) return (performance.now() - started) / 1000;
    await sleep(100);
  }
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
    const { app } = service;
    await seedReadData(service, { posts: 2_000, authors: 20, tag: 'step' });
    const posters = await fundedMembers(service, 40, FUNDING_MICRO);
    const likerKeys: string[] = [];
    for (let i = 0; i < 200; i++) {
      const liker = await createAccount(app, { handle: `step_l${i}` });
      likerKeys.push((await createApiKey(app.apiKeys, liker.id, ['engage'])).key);
    }
    const { rows: newest } = await sql<{ id: string }>`
      SELECT id FROM posts ORDER BY created_at DESC, id DESC LIMIT 50`.execute(app.db);
    const writer = await startWriter({
      base: service.apiUrl!,
      posterKeys: posters.map((p) => p.key),
      likerKeys,
      recentPostIds: newest.map((r) => r.id),
    });
    try {
      console.log(
        `write-step bench: roles api+worker, nothing read; windows of ${settings.seconds} s, each after the payments backlog settled`,
      );
      for (const [i, window] of settings.plan.entries()) {
        const settled = await settle(service);
        const before = await connections(service);
        const cpuAtStart = cpuTimes();
        await writer.start(window.rates, 0);
        await sleep(settings.seconds * 1000);
        const writes = await writer.stop();
        const after = await connections(service);
        console.log(
          `${String(i + 1).padStart(2)} ${window.name.padEnd(4)} ${window.rates.postsPerSecond} + ${window.rates.likesPerSecond}/s:` +
            ` posts p50 ${ms(writes.posts.p50Ms)} ms p99 ${ms(writes.posts.p99Ms)} ms,` +
            ` likes p50 ${ms(writes.likes.p50Ms)} ms p99 ${ms(writes.likes.p99Ms)} ms,` +
            ` ${writes.inFlightMax} in flight at most; Postgres connections ${before} -> ${after}` +
            ` (backlog settled in ${settled.toFixed(1)} s); ${describeCpu(cpuAtStart, cpuTimes())}`,
        );
      }
    } finally {
      await writer.close();
    }
    return 0;
  } finally {
    await stop();
  }
}

runBench(main);
