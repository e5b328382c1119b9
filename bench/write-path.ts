/**
 * Benchmark of the write-path issue: paid posts through `POST /api/v1/posts` over HTTP, confirmed on
 * the embedded localnet by the payments worker, beside the floor of the same Postgres work.
 *
 *   npx tsx bench/write-path.ts
 *
 * The real service runs in this process (`runService`, roles api + worker) on a fresh DATA_DIR and
 * free ports: embedded Postgres, Redis, chdb and the localnet thread, as under `npm start`.
 * Setup (not timed) creates BENCH_ACCOUNTS accounts with API keys, funds each on chain and records
 * the deposit in the ledger.
 *
 *   0. warm-up (not counted): the closed loop below for BENCH_WARMUP_SECONDS (default 5; 0 skips
 *      it), then until its posts confirmed. A fresh process runs the hot paths unoptimized while V8
 *      compiles them on its helper threads: without it, a 10 s phase measures the service's first
 *      seconds (JIT warm-up on both cores) rather than the service that runs for days.
 *   1. throughput: BENCH_CONCURRENCY clients in a closed loop for BENCH_SECONDS. A 201 answers once
 *      the cluster executed the payment; confirmed/s counts the phase's posts whose outbox row
 *      reached 'confirmed', over the time from the phase's start to the last confirmation.
 *   2. latency: an open loop offering BENCH_RATE posts/s for BENCH_LATENCY_SECONDS; p50/p99.
 *   3. floor: the same shape of Postgres work (conditional debit UPDATE + INSERT in a transaction)
 *      with `pg` on scratch tables in the same database, same concurrency, BENCH_FLOOR_SECONDS.
 *
 * At the end every post's outbox row must reach 'confirmed' and every account's ledger balance must
 * equal its on-chain USDC; a problem or a missed target exits 1.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { PublicKey } from '@solana/web3.js';
import { sql } from 'kysely';
import pg from 'pg';
import { associatedTokenAccount } from '../src/adapters/solana/index.js';
import type { RunningService } from '../src/service.js';
import { intSetting } from './bench-settings.js';
import { POSTER_FUNDING_MICRO } from './bench-writer.js';
import { pollUntil } from './clock.js';
import { fundedMembers, type Member } from './funded-accounts.js';
import { percentile } from './stats.js';
import { newTally, postOnce, runLoadPhase } from './write-path-load.js';
import { cpuTimes, describeCpu } from './machine-cpu.js';
import { runBench, type Bench } from './runner.js';
import { registerEndpoints } from './webhook-endpoints.js';
import { startReceiver } from './webhook-receiver.js';

const TARGET_CONFIRMED_PER_SECOND = 300;
const TARGET_P99_MS = 250;
/** Each floor balance row starts with $10^9: a floor run never runs dry. */
const FLOOR_FUNDING_MICRO = 10n ** 15n;

function readSettings() {
  return {
    accounts: intSetting('BENCH_ACCOUNTS', 40, 1, 4),
    concurrency: intSetting('BENCH_CONCURRENCY', 32, 1, 4),
    seconds: intSetting('BENCH_SECONDS', 10, 1, 1),
    rate: intSetting('BENCH_RATE', 150, 1, 10),
    latencySeconds: intSetting('BENCH_LATENCY_SECONDS', 8, 1, 1),
    floorSeconds: intSetting('BENCH_FLOOR_SECONDS', 5, 1, 1),
    warmupSeconds: intSetting('BENCH_WARMUP_SECONDS', 5, 0, 1),
    // Webhook endpoints registered on the posting accounts (5 each), delivering to a local receiver.
    webhookEndpoints: intSetting('BENCH_WEBHOOK_ENDPOINTS', 0, 0),
  };
}

// ---------------------------------------------------------------- the floor

/**
 * The Postgres work of a paid post without the rest: BEGIN, a conditional debit of a balance row
 * (UPDATE ... WHERE balance >= amount), one INSERT, COMMIT, on scratch tables dropped afterwards.
 */
async function floor(
  url: string,
  accounts: number,
  concurrency: number,
  seconds: number,
): Promise<{ transactions: number; seconds: number; perSecond: number; problems: string[] }> {
  const suffix = randomBytes(4).toString('hex');
  const balances = `bench_floor_balances_${suffix}`;
  const rows = `bench_floor_rows_${suffix}`;
  const pool = new pg.Pool({ connectionString: url, max: concurrency });
  const problems: string[] = [];
  try {
    await pool.query(
      `CREATE TABLE ${balances} (id int PRIMARY KEY, balance bigint NOT NULL CHECK (balance >= 0))`,
    );
    await pool.query(
      `CREATE TABLE ${rows} (id bigserial PRIMARY KEY, account_id int NOT NULL, amount bigint NOT NULL,` +
        ` content text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    );
    await pool.query(`INSERT INTO ${balances} (id, balance) SELECT g, $1 FROM generate_series(0, $2 - 1) g`, [
      FLOOR_FUNDING_MICRO.toString(),
      accounts,
    ]);
    // Open every connection before the clock starts.
    const clients = await Promise.all(Array.from({ length: concurrency }, () => pool.connect()));
    let transactions = 0;
    let next = 0;
    const started = performance.now();
    const deadline = started + seconds * 1000;
    await Promise.all(
      clients.map(async (client) => {
        try {
          while (performance.now() < deadline) {
            const account = next++ % accounts;
            await client.query('BEGIN');
            const debit = await client.query(
              `UPDATE ${balances} SET balance = balance - $2 WHERE id = $1 AND balance >= $2 RETURNING balance`,
              [account, 1_000_000],
            );
            if (debit.rowCount !== 1) {
              await client.query('ROLLBACK');
              problems.push(`floor: account ${account} ran out of balance`);
              return;
            }
            await client.query(`INSERT INTO ${rows} (account_id, amount, content) VALUES ($1, $2, $3)`, [
              account,
              1_000_000,
              `floor #${transactions}`,
            ]);
            await client.query('COMMIT');
            transactions++;
          }
        } finally {
          client.release();
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    const { rows: check } = await pool.query<{ n: string; spent: string }>(
      `SELECT (SELECT count(*) FROM ${rows})::text AS n,` +
        ` (SELECT sum($1::bigint - balance) FROM ${balances})::text AS spent`,
      [FLOOR_FUNDING_MICRO.toString()],
    );
    if (
      Number(check[0]!.n) !== transactions ||
      BigInt(check[0]!.spent) !== BigInt(transactions) * 1_000_000n
    ) {
      problems.push(
        `floor: ${transactions} committed, table holds ${check[0]!.n} rows, ${check[0]!.spent} spent`,
      );
    }
    return { transactions, seconds: elapsed, perSecond: transactions / elapsed, problems };
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${rows}, ${balances}`).catch(() => {});
    await pool.end();
  }
}

// ---------------------------------------------------------------- verification

/** Waits (up to a minute) until no post's outbox row is still 'signed' or 'sent'. */
async function waitSettled(service: RunningService, postIds: readonly string[]) {
  const read = async () => {
    const { rows } = await sql<{ status: string; n: string }>`
      SELECT c.status, count(*)::text AS n
      FROM posts p JOIN chain_transactions c ON c.movement_id = p.movement_id
      WHERE p.id = ANY(${postIds}::uuid[])
      GROUP BY c.status`.execute(service.app.db);
    return rows.map((r) => ({ status: r.status, n: Number(r.n) }));
  };
  const unfinished = (statuses: { status: string; n: number }[]) =>
    statuses.filter((s) => s.status === 'signed' || s.status === 'sent').reduce((a, s) => a + s.n, 0);
  const { value: statuses, seconds } = await pollUntil(read, (s) => unfinished(s) === 0, {
    everyMs: 20,
    limitMs: 60_000,
  });
  return {
    statuses,
    // Confirmed or past it: the worker's finality follower takes confirmed rows on to finalized.
    confirmed: statuses
      .filter((s) => s.status === 'confirmed' || s.status === 'finalized')
      .reduce((a, s) => a + s.n, 0),
    settledAtMs: Date.now(),
    waitSeconds: seconds,
  };
}

/** Waits for every post's outbox row to be confirmed, then checks ledger = chain per account. */
async function verify(service: RunningService, members: readonly Member[], postIds: readonly string[]) {
  const { app, platform } = service;
  const problems: string[] = [];
  const { statuses, confirmed, waitSeconds } = await waitSettled(service, postIds);
  if (confirmed !== postIds.length) {
    problems.push(
      `${confirmed} of ${postIds.length} posts' outbox rows confirmed (${statuses.map((s) => `${s.status}: ${s.n}`).join(', ')})`,
    );
  }
  const answers = await app.rpc.batch<{ value: { amount: string } }>(
    members.map((m) => ({
      method: 'getTokenAccountBalance',
      params: [
        associatedTokenAccount(platform.usdcMint, new PublicKey(m.account.walletAddress)).toBase58(),
        { commitment: 'confirmed' },
      ],
    })),
  );
  for (const [i, member] of members.entries()) {
    const answer = answers[i]!;
    if ('error' in answer) {
      problems.push(
        `${member.account.handle}: getTokenAccountBalance failed: ${JSON.stringify(answer.error)}`,
      );
      continue;
    }
    const onChain = BigInt(answer.result.value.amount);
    const { availableMicro } = await app.ledger.money(member.account.id);
    if (availableMicro !== onChain) {
      problems.push(`${member.account.handle}: ledger ${availableMicro} != chain ${onChain}`);
    }
  }
  return { problems, waitSeconds };
}

// ---------------------------------------------------------------- main

async function main(bench: Bench): Promise<string> {
  const settings = readSettings();
  const setupStarted = performance.now();
  const service = await bench.startService(['api', 'worker']);
  const { config } = service.app;
  const base = service.apiUrl!;
  const stackSeconds = (performance.now() - setupStarted) / 1000;
  const members = await fundedMembers(service, settings.accounts, POSTER_FUNDING_MICRO);
  // Issue 39's check: the write path with every post's events delivered to webhooks as it runs.
  const receiver = settings.webhookEndpoints > 0 ? await startReceiver() : undefined;
  if (receiver) {
    bench.defer(() => receiver.close());
    await registerEndpoints(
      base,
      members.map((m) => m.key),
      settings.webhookEndpoints,
      receiver.port,
    );
  }
  // Warm-up (not counted): one post per account, so keys, wallets and connections are warm.
  const warm = newTally();
  await Promise.all(members.map((m) => postOnce(base, m.key, warm)));
  console.log(
    `write-path bench: ${settings.accounts} accounts, ${os.cpus().length} cores, WRITE_TIMEOUT_MS ${config.WRITE_TIMEOUT_MS}` +
      `, ${settings.webhookEndpoints} webhook endpoints` +
      ` (stack ${stackSeconds.toFixed(1)} s, accounts + warm-up ${((performance.now() - setupStarted) / 1000 - stackSeconds).toFixed(1)} s)`,
  );

  // The load runs in a child process, as clients would: its HTTP client is not on the
  // service's event loop.
  const keys = members.map((m) => m.key);
  const warmLoad =
    settings.warmupSeconds > 0
      ? await runLoadPhase({
          kind: 'closed',
          base,
          keys,
          concurrency: settings.concurrency,
          seconds: settings.warmupSeconds,
        })
      : undefined;
  // Its backlog settles before the clock starts, so the throughput phase is charged only its own.
  if (warmLoad) await waitSettled(service, warmLoad.tally.postIds);
  const cpuAtStart = cpuTimes();
  const throughput = await runLoadPhase({
    kind: 'closed',
    base,
    keys,
    concurrency: settings.concurrency,
    seconds: settings.seconds,
  });
  const cpuDuringThroughput = describeCpu(cpuAtStart, cpuTimes());
  const throughputSettled = await waitSettled(service, throughput.tally.postIds);
  const latency = await runLoadPhase({
    kind: 'open',
    base,
    keys,
    rate: settings.rate,
    seconds: settings.latencySeconds,
  });
  const floorRun = await floor(
    service.app.stack.postgres.url,
    settings.accounts,
    settings.concurrency,
    settings.floorSeconds,
  );

  const allIds = [
    ...warm.postIds,
    ...(warmLoad?.tally.postIds ?? []),
    ...throughput.tally.postIds,
    ...latency.tally.postIds,
  ];
  const check = await verify(service, members, allIds);
  const problems = [...check.problems, ...floorRun.problems];
  for (const [label, tally] of [
    ['warm-up', warm],
    ['warm-up load', warmLoad?.tally ?? newTally()],
    ['throughput', throughput.tally],
    ['latency', latency.tally],
  ] as const) {
    for (const [outcome, n] of tally.other) problems.push(`${label}: ${n} x ${outcome}`);
  }
  // Every post confirmed is no check when none was paid (a service that answers nothing 2xx).
  for (const [label, tally] of [
    ['throughput', throughput.tally],
    ['latency', latency.tally],
  ] as const) {
    if (tally.postIds.length === 0) problems.push(`${label}: no post was paid`);
  }

  const t = throughput.tally;
  const confirmedSeconds = (throughputSettled.settledAtMs - throughput.startedAtMs) / 1000;
  const confirmedPerSecond = throughputSettled.confirmed / confirmedSeconds;
  const p50 = percentile(latency.tally.latenciesMs, 50);
  const p99 = percentile(latency.tally.latenciesMs, 99);
  const ratio = confirmedPerSecond / floorRun.perSecond;
  const throughputMark = bench.target(confirmedPerSecond >= TARGET_CONFIRMED_PER_SECOND);
  const latencyMark = bench.target(p99 < TARGET_P99_MS && latency.tally.pending === 0);

  console.log('');
  if (warmLoad) {
    const w = warmLoad.tally;
    console.log(
      `0. warm-up (not counted), closed loop, ${settings.concurrency} clients, ${warmLoad.seconds.toFixed(1)} s: ` +
        `${w.executed} executed, ${(w.executed / warmLoad.seconds).toFixed(0)}/s`,
    );
  }
  console.log(
    `1. throughput, closed loop, ${settings.concurrency} clients, ${throughput.seconds.toFixed(1)} s:`,
  );
  console.log(
    `   ${t.executed} executed (201), ${t.pending} pending (202), ${[...t.other.values()].reduce((a, b) => a + b, 0)} other` +
      `  latency p50 ${percentile(t.latenciesMs, 50).toFixed(0)} ms, p99 ${percentile(t.latenciesMs, 99).toFixed(0)} ms;` +
      ` ${throughputSettled.confirmed} confirmed on chain ${confirmedSeconds.toFixed(1)} s after the start`,
  );
  console.log(`   ${cpuDuringThroughput}`);
  console.log(
    `   ${throughputMark} ${confirmedPerSecond.toFixed(0).padStart(6)} confirmed paid posts/s   target >= ${TARGET_CONFIRMED_PER_SECOND}`,
  );
  const l = latency.tally;
  console.log(
    `2. latency, open loop, ${settings.rate} posts/s offered for ${settings.latencySeconds} s (${l.latenciesMs.length} posts,` +
      ` done in ${latency.seconds.toFixed(1)} s, schedule lag max ${latency.lagMs.toFixed(0)} ms):`,
  );
  console.log(`   ${l.executed} executed (201), ${l.pending} pending (202)`);
  console.log(
    `   ${latencyMark} p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0).padStart(6)} ms              target p99 < ${TARGET_P99_MS} ms`,
  );
  console.log(
    `3. floor, Postgres debit + insert transaction, ${settings.concurrency} connections, ${floorRun.seconds.toFixed(1)} s:`,
  );
  console.log(
    `        ${floorRun.perSecond.toFixed(0).padStart(6)} transactions/s (${floorRun.transactions})`,
  );
  console.log(`   ratio paid posts / floor: ${(ratio * 100).toFixed(1)}%`);
  console.log(
    `   check (${check.waitSeconds.toFixed(1)} s): ${
      problems.length === 0
        ? `all ${allIds.length} posts' outbox rows confirmed; ledger = on-chain USDC for all ${members.length} accounts`
        : 'PROBLEMS'
    }`,
  );
  if (receiver) {
    console.log(`   webhooks: ${(await receiver.report(0)).received} deliveries received during the run`);
  }
  problems.forEach(bench.problem);
  return (
    `${confirmedPerSecond.toFixed(0)} confirmed posts/s, p99 ${p99.toFixed(0)} ms at ${settings.rate}/s, ` +
    `floor ${floorRun.perSecond.toFixed(0)}/s`
  );
}

runBench(main);
