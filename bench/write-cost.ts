/**
 * What the writes of `bench:read-under-writes` cost the service, with no reads (issue 21's open
 * part: under writes the reads lose what the writes take).
 *
 *   npm run bench:write-cost
 *
 * The service (roles api and worker, as read-under-writes runs it) on a fresh embedded stack; the
 * same writer child pays posts and likes at fixed rates through the API. Three phases of
 * BENCH_SECONDS (10) each, after BENCH_WARMUP_SECONDS (3) at the phase's rate: nothing written (the
 * background loops alone), BENCH_LIKES likes/s (100), BENCH_POSTS paid posts/s (20). For each it
 * prints the CPU of every thread of the service's process (from /proc: the main thread, which
 * also serves the reads, apart), the main thread's milliseconds per write above the idle phase,
 * Postgres transactions and Redis commands per write (Redis from INFO commandstats: its server's
 * count, which includes the commands BullMQ's Lua scripts run). No target: a figure to compare a
 * change of the write path with, on one machine, in one run. A write not answered 2xx exits 1.
 * A smoke run (BENCH_SMOKE=1): phases of 1 s, no warm-up, 5 likes/s, 2 posts/s, 2 posters and 5
 * likers.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Redis } from 'ioredis';
import { createRedis } from '../src/adapters/redis/index.js';
import type { RunningService } from '../src/service.js';
import { intSetting, sized } from './bench-settings.js';
import { cpuTimes } from './machine-cpu.js';
import { runBench, startBenchService } from './bench-service.js';
import { startFundedWriter } from './bench-writer.js';
import { seedReadData } from './read-seed.js';
import type { WriteRates } from './read-writer.js';
import { processCpuSeconds, threadCores, threadCpuSeconds } from './thread-cpu.js';

interface Counters {
  transactions: number;
  redisCommands: number;
}

async function counters(service: RunningService, redis: Redis): Promise<Counters> {
  const { rows } = await sql<{ n: string }>`
    SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()`.execute(
    service.app.db,
  );
  const info = await redis.info('commandstats');
  let redisCommands = 0;
  for (const match of info.matchAll(/^cmdstat_\w+:calls=(\d+)/gm)) redisCommands += Number(match[1]);
  return { transactions: Number(rows[0]!.n), redisCommands };
}

async function main(): Promise<number> {
  const seconds = intSetting('BENCH_SECONDS', 10, 1, 1);
  const warmupSeconds = intSetting('BENCH_WARMUP_SECONDS', 3, 0, 0);
  const likesPerSecond = intSetting('BENCH_LIKES', 100, 1, 5);
  const postsPerSecond = intSetting('BENCH_POSTS', 20, 1, 2);
  const { service, stop } = await startBenchService(['api', 'worker']);
  let closeWriter: (() => Promise<void>) | undefined;
  // One connection for the INFO readings: their own commands are a few per phase.
  const redis = createRedis(service.app.stack.redis.url, 'client');
  try {
    await seedReadData(service, { posts: 500, authors: 5, tag: 'wc' });
    const writer = await startFundedWriter(service, {
      posters: sized(40, 2),
      likers: sized(200, 5),
      tag: 'wc',
    });
    closeWriter = writer.close;
    console.log(
      `write-cost bench: roles api+worker, no reads; ${seconds} s per phase after ${warmupSeconds} s at its rate; ` +
        `Redis ${service.app.stack.redis.source}`,
    );

    // No target, but a check: a phase's writes all answered 2xx, and some did.
    const problems: string[] = [];
    let idleMainCores: number | undefined;
    let idleMachineCores: number | undefined;
    const phases: Array<{ label: string; rates: WriteRates; kind?: 'likes' | 'posts' }> = [
      { label: 'nothing written', rates: { postsPerSecond: 0, likesPerSecond: 0 } },
      { label: `${likesPerSecond} likes/s`, rates: { postsPerSecond: 0, likesPerSecond }, kind: 'likes' },
      {
        label: `${postsPerSecond} paid posts/s`,
        rates: { postsPerSecond, likesPerSecond: 0 },
        kind: 'posts',
      },
    ];
    for (const phase of phases) {
      await writer.start(phase.rates, warmupSeconds * 1000);
      await sleep(warmupSeconds * 1000);
      const fromMachine = cpuTimes();
      const fromThreads = threadCpuSeconds();
      const fromProcesses = processCpuSeconds();
      const fromCounters = await counters(service, redis);
      const started = performance.now();
      await sleep(seconds * 1000);
      const elapsed = (performance.now() - started) / 1000;
      const cores = threadCores(fromThreads, threadCpuSeconds(), elapsed);
      const others = threadCores(fromProcesses, processCpuSeconds(), elapsed);
      const toMachine = cpuTimes();
      const toCounters = await counters(service, redis);
      const result = await writer.stop();
      const main = cores.find(([name]) => name === 'main')?.[1] ?? 0;
      idleMainCores ??= main;
      // Every process on the machine (Postgres, Redis, the writer, the localnet thread): USER_HZ ticks.
      const machine = fromMachine && toMachine ? (toMachine.busy - fromMachine.busy) / 100 / elapsed : 0;
      idleMachineCores ??= machine;
      const answered = phase.kind ? result[phase.kind].okInWindow / result.steadySeconds : 0;
      if (phase.kind) {
        const { sent, ok, other } = result[phase.kind];
        if (ok === 0 || ok !== sent) {
          problems.push(
            `${phase.label}: ${ok} of ${sent} answered 2xx` +
              other.map(([outcome, n]) => `; ${n} x ${outcome}`).join(''),
          );
        }
      }
      console.log(`\n== ${phase.label}`);
      console.log(
        `threads (cores): ${cores.map(([name, c]) => `${name} ${c.toFixed(3)}`).join(', ') || 'not available'}`,
      );
      const transactions = (toCounters.transactions - fromCounters.transactions) / elapsed;
      const commands = (toCounters.redisCommands - fromCounters.redisCommands) / elapsed;
      console.log(
        `other processes (cores): ${others.map(([name, c]) => `${name} ${c.toFixed(3)}`).join(', ') || 'not available'}`,
      );
      console.log(
        `machine ${machine.toFixed(2)} cores busy; Postgres ${transactions.toFixed(0)} transactions/s; Redis ${commands.toFixed(0)} commands/s`,
      );
      if (phase.kind && answered > 0) {
        console.log(
          `${phase.kind}: ${answered.toFixed(1)}/s answered 2xx; per write: main thread ` +
            `${((1000 * (main - idleMainCores)) / answered).toFixed(2)} ms above idle, machine ` +
            `${((1000 * (machine - idleMachineCores)) / answered).toFixed(2)} ms, ` +
            `${(transactions / answered).toFixed(1)} Postgres transactions, ${(commands / answered).toFixed(0)} Redis commands`,
        );
      }
    }
    console.log('');
    for (const problem of problems) console.log(`! ${problem}`);
    console.log(`${problems.length === 0 ? 'PASS' : 'FAIL'}: write-cost (every write answered 2xx)`);
    return problems.length === 0 ? 0 : 1;
  } finally {
    redis.disconnect();
    await closeWriter?.();
    await stop();
  }
}

runBench(main);
