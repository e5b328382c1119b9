/**
 * Benchmark of the chain-indexer issue: reconciliation against the localnet, event shipping into
 * ClickHouse, and the creator-earnings read over ten million rows.
 *
 *   npm run bench:indexer
 *
 * The service's stack runs in this process (`runService`, role indexer, as `npm run start:indexer`
 * runs it) on a fresh DATA_DIR and free ports: embedded Postgres, Redis, chdb and the localnet
 * thread with its real 400 ms slot, as under `npm start`. The role's own loops are stopped before
 * anything is seeded: nothing but the timed rounds reconciles or ships meanwhile.
 *
 *   a. reconcile: BENCH_PAYMENTS USDC transfers between two platform wallets (treasury and creator
 *      fund), signed with the platform fee payer and confirmed on chain with confirmMany, recorded
 *      in Postgres as confirmed outbox rows with their ledger legs (setup, not timed). Timed:
 *      reconcileRound loops (BENCH_RECONCILE_ROWS rows a round, BENCH_RECONCILE_WORKERS loops at
 *      once, as several indexers would) until every row is checked; all must be 'matched'.
 *   b. shipping: BENCH_EVENTS domain events inserted with one INSERT ... SELECT generate_series
 *      (not timed); timed: shipBatch loops (BENCH_SHIP_ROWS a batch) until drained; ClickHouse
 *      must then hold exactly Postgres's events.
 *   c. earnings: BENCH_EARNINGS rows straight into creator_earnings (INSERT ... SELECT FROM numbers,
 *      1,000 creators, 90 days); timed: BENCH_QUERIES creatorEarnings calls (a random creator, 90
 *      days by day), p50 and p99.
 *
 * A missed target or a failed check exits 1.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import type { ClickHouse } from '../src/adapters/clickhouse/index.js';
import {
  buildTransfer,
  confirmMany,
  fundUsdc,
  signTransaction,
  USDC_DECIMALS,
  type PlatformChain,
  type SignedForSend,
} from '../src/adapters/solana/index.js';
import type { App } from '../src/app/wiring.js';
import { readCreatorEarnings } from '../src/app/analytics/creator-earnings.js';
import { SHIP_BATCH_ROWS, shipBatch } from '../src/app/indexer/event-shipper.js';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { intSetting } from './bench-settings.js';
import { secondsSince as seconds } from './clock.js';
import { runBench, type Bench } from './runner.js';
import { percentile } from './stats.js';

const TARGET_RECONCILED_PER_SECOND = 2_000;
const TARGET_SHIPPED_PER_SECOND = 100_000;
const TARGET_EARNINGS_P50_MS = 50;
const CREATORS = 1_000;
const DAYS = 90;
/** Transfers signed and sent per confirmMany call, and calls in flight at once. */
const SEND_CHUNK = 500;
const SEND_CONCURRENCY = 3;
/** Far more than a run moves: each transfer is 1 to 1,000 micro-USD. */
const FUNDING_MICRO = 10_000_000_000n;

function readSettings() {
  return {
    payments: intSetting('BENCH_PAYMENTS', 4_000, 1, 200),
    reconcileRows: intSetting('BENCH_RECONCILE_ROWS', 1_000, 1, 50),
    reconcileWorkers: intSetting('BENCH_RECONCILE_WORKERS', 2, 1),
    events: intSetting('BENCH_EVENTS', 500_000, 1, 2_000),
    // The batch the running shipper uses (a smoke run ships several smaller ones).
    shipRows: intSetting('BENCH_SHIP_ROWS', SHIP_BATCH_ROWS, 1, 500),
    earnings: intSetting('BENCH_EARNINGS', 10_000_000, CREATORS, 10_000),
    queries: intSetting('BENCH_QUERIES', 100, 1, 5),
  };
}

type Settings = ReturnType<typeof readSettings>;

// ---------------------------------------------------------------- a. reconcile

/**
 * Confirmed payments made cheaply: transfers between the treasury and the creator fund (both are
 * platform wallets the reconciler maps ledger kinds to), in both directions so both need funds.
 * Their outbox rows and legs go into Postgres in three set-based INSERTs.
 */
async function seedPayments(app: App, platform: PlatformChain, count: number): Promise<string[]> {
  const { treasury, creator_fund: fund, fee_payer: feePayer } = platform.signers;
  for (const wallet of [treasury, fund]) {
    await fundUsdc(app.rpc, platform, wallet.publicKey.toBase58(), FUNDING_MICRO);
  }
  const accounts = await app.db
    .selectFrom('ledger_accounts')
    .select(['id', 'kind'])
    .where('kind', 'in', ['treasury', 'creator_fund'])
    .where('currency', '=', 'usdc')
    .execute();
  const ledgerId = (kind: string) => accounts.find((a) => a.kind === kind)!.id;
  const tag = randomBytes(4).toString('hex');

  const rows = {
    movement: [] as string[],
    key: [] as string[],
    signature: [] as string[],
    wire: [] as string[],
    blockhash: [] as string[],
    validUntil: [] as string[],
    legMovement: [] as string[],
    legAccount: [] as string[],
    legAmount: [] as string[],
  };
  let next = 0;
  const failures: string[] = [];
  const sender = async (): Promise<void> => {
    // Each sender takes the next chunk; reading and advancing `next` with no await between is atomic.
    for (let from = next; from < count; from = next) {
      next += SEND_CHUNK;
      const { blockhash, lastValidBlockHeight } = await app.rpc.getLatestBlockhash('confirmed');
      const planned = Array.from({ length: Math.min(SEND_CHUNK, count - from) }, (_, k) => {
        const i = from + k;
        const [payer, payee] = i % 2 === 0 ? [treasury, fund] : [fund, treasury];
        return { i, payer, payee, amount: 1n + BigInt((i * 7919) % 1000) };
      });
      const items: SignedForSend[] = planned.map((p) => ({
        ...signTransaction(
          buildTransfer({
            feePayer: feePayer.publicKey,
            recentBlockhash: blockhash,
            legs: [
              {
                mint: platform.usdcMint,
                decimals: USDC_DECIMALS,
                from: p.payer.publicKey,
                to: p.payee.publicKey,
                amount: p.amount,
              },
            ],
            memo: `bench indexer ${tag} #${p.i}`,
          }),
          [feePayer, p.payer],
        ),
        lastValidBlockHeight,
      }));
      const outcomes = await confirmMany(app.rpc, items, {
        commitment: 'confirmed',
        skipPreflight: true,
        pollMs: 100,
      });
      outcomes.forEach((outcome, k) => {
        if (!outcome.ok) {
          failures.push(`${outcome.signature}: ${outcome.error.message}`);
          return;
        }
        const p = planned[k]!;
        const movement = randomUUID();
        rows.movement.push(movement);
        rows.key.push(`bench:${tag}:${p.i}`);
        rows.signature.push(outcome.signature);
        rows.wire.push(items[k]!.wire.toString('hex'));
        rows.blockhash.push(blockhash);
        rows.validUntil.push(String(lastValidBlockHeight));
        const payerKind = p.payer === treasury ? 'treasury' : 'creator_fund';
        const payeeKind = p.payer === treasury ? 'creator_fund' : 'treasury';
        rows.legMovement.push(movement, movement);
        rows.legAccount.push(ledgerId(payerKind), ledgerId(payeeKind));
        rows.legAmount.push(String(-p.amount), String(p.amount));
      });
    }
  };
  await Promise.all(Array.from({ length: SEND_CONCURRENCY }, sender));
  if (failures.length > 0)
    throw new Error(`${failures.length} bench transfers failed: ${failures.slice(0, 3).join('; ')}`);

  await app.db.transaction().execute(async (trx) => {
    await sql`INSERT INTO ledger_movements (id, kind, idempotency_key)
              SELECT id, 'send', key FROM unnest(${rows.movement}::uuid[], ${rows.key}::text[]) AS t(id, key)`.execute(
      trx,
    );
    await sql`INSERT INTO ledger_legs (movement_id, ledger_account_id, amount, counts)
              SELECT m, a, x, 'none'
                FROM unnest(${rows.legMovement}::uuid[], ${rows.legAccount}::uuid[], ${rows.legAmount}::bigint[])
                     AS t(m, a, x)`.execute(trx);
    await sql`INSERT INTO chain_transactions (movement_id, signature, wire, blockhash, last_valid_block_height, status)
              SELECT m, s, decode(w, 'hex'), b, v, 'confirmed'
                FROM unnest(${rows.movement}::uuid[], ${rows.signature}::text[], ${rows.wire}::text[],
                            ${rows.blockhash}::text[], ${rows.validUntil}::bigint[]) AS t(m, s, w, b, v)`.execute(
      trx,
    );
  });
  return rows.movement;
}

async function benchReconcile(app: App, settings: Settings, movementIds: readonly string[]) {
  const started = performance.now();
  let checked = 0;
  // Several loops at once, as several indexer processes would: rounds claim rows SKIP LOCKED.
  const loop = async (): Promise<void> => {
    for (;;) {
      const round = await reconcileRound(app, {
        missingAfterMs: 3_600_000,
        limit: settings.reconcileRows,
        // Only the confirmed pass: a finalized re-check would count the same rows twice.
        finalizedRecheckMs: 3_600_000,
      });
      checked += round.checked;
      if (round.checked === 0) return;
    }
  };
  await Promise.all(Array.from({ length: settings.reconcileWorkers }, loop));
  const elapsed = seconds(started);
  const { rows } = await sql<{ status: string | null; n: string }>`
    SELECT reconciled_status AS status, count(*)::text AS n FROM chain_transactions
     WHERE movement_id = ANY(${movementIds}::uuid[]) GROUP BY 1 ORDER BY 1`.execute(app.db);
  return { checked, elapsed, perSecond: checked / elapsed, statuses: rows };
}

// ---------------------------------------------------------------- b. shipping

async function drain(app: App, limit: number): Promise<{ events: number; legs: number }> {
  const total = { events: 0, legs: 0 };
  for (;;) {
    const batch = await shipBatch(app, limit);
    total.events += batch.events;
    total.legs += batch.legs;
    if (batch.events + batch.legs === 0) return total;
  }
}

async function benchShipping(app: App, settings: Settings) {
  await drain(app, settings.shipRows); // legs from part a and anything else: not timed
  const insertStarted = performance.now();
  await sql`
    INSERT INTO domain_events (type, actor_id, post_id, amount_micro, payload, occurred_at)
    SELECT (ARRAY['post.created', 'post.liked', 'account.followed'])[1 + g % 3],
           gen_random_uuid(),
           CASE WHEN g % 3 = 2 THEN NULL ELSE gen_random_uuid() END,
           CASE WHEN g % 3 = 0 THEN 1000000 ELSE 0 END,
           jsonb_build_object('bench', g),
           now() - make_interval(secs => g / 1000.0)
      FROM generate_series(1, ${settings.events}::int) AS g`.execute(app.db);
  const insertSeconds = seconds(insertStarted);

  const started = performance.now();
  const shipped = await drain(app, settings.shipRows);
  const elapsed = seconds(started);

  const pgCount = await sql<{ n: string }>`SELECT count(*)::text AS n FROM domain_events`.execute(app.db);
  const result = await app.clickhouse.client.query({
    query: `SELECT toString(count()) AS n FROM ${app.clickhouse.table('domain_events')} FINAL`,
    format: 'JSONEachRow',
  });
  const [chCount] = await result.json<{ n: string }>();
  return {
    shipped: shipped.events,
    elapsed,
    perSecond: shipped.events / elapsed,
    insertSeconds,
    postgres: Number(pgCount.rows[0]!.n),
    clickhouse: Number(chCount?.n ?? 0),
  };
}

// ---------------------------------------------------------------- c. earnings

/** The bench's creator ids: a fixed prefix and the creator's number, so SQL and JS agree. */
const creatorId = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

async function benchEarnings(app: App, settings: Settings) {
  const to = new Date();
  const from = new Date(to.getTime() - DAYS * 86_400_000);
  const insertStarted = performance.now();
  await app.clickhouse.client.command({
    query: `INSERT INTO ${app.clickhouse.table('creator_earnings')} (creator_id, created_at, leg_id, movement_kind, amount)
            SELECT toUUID(concat('00000000-0000-4000-8000-', leftPad(toString(number % ${CREATORS}), 12, '0'))),
                   fromUnixTimestamp64Milli(toInt64(${from.getTime()} + cityHash64(number) % ${DAYS * 86_400_000}), 'UTC'),
                   1000000000000 + number,
                   if(number % 2 = 0, 'post', 'repost'),
                   toInt64(1 + cityHash64(number, 1) % 1000000)
              FROM numbers(${settings.earnings})`,
  });
  const insertSeconds = seconds(insertStarted);

  for (let i = 0; i < 3; i++) await earningsPerDay(app.clickhouse, creatorId(i), from, to); // warm-up
  const latencies: number[] = [];
  let buckets = 0;
  let totalMicro = 0n;
  for (let i = 0; i < settings.queries; i++) {
    const creator = creatorId(Math.floor(Math.random() * CREATORS));
    const started = performance.now();
    const points = await earningsPerDay(app.clickhouse, creator, from, to);
    latencies.push(performance.now() - started);
    buckets += points.length;
    totalMicro += points.reduce((sum, p) => sum + p.amountMicro, 0n);
  }
  latencies.sort((a, b) => a - b);
  return {
    insertSeconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    bucketsPerQuery: buckets / settings.queries,
    rowsPerCreator: settings.earnings / CREATORS,
    totalMicro,
  };
}

/** creatorEarnings' read at DAY in UTC, ungrouped (the dashboard's daily chart). */
function earningsPerDay(ch: ClickHouse, creatorId: string, from: Date, to: Date) {
  return readCreatorEarnings(ch, {
    creatorId,
    from,
    to,
    granularity: 'day',
    timezone: 'UTC',
    groupBy: 'none',
  });
}

// ---------------------------------------------------------------- main

async function main(bench: Bench): Promise<string> {
  const settings = readSettings();
  const stackStarted = performance.now();
  // The indexer role, not none: a process whose roles are none or only the api gets the stand-in
  // without ClickHouse (src/service.ts), and parts b and c write and read ClickHouse.
  const service = await bench.startService(['indexer']);
  // Its reconciler and wallet follower would claim the bench's rows beside the timed rounds.
  for (const role of service.roles) await role.stop();
  const { app, platform } = service;
  console.log(
    `indexer bench: ${os.cpus().length} cores, stack up in ${seconds(stackStarted).toFixed(1)} s; sizes: ` +
      `${settings.payments} payments (${settings.reconcileWorkers} x ${settings.reconcileRows}-row rounds), ` +
      `${settings.events} events (${settings.shipRows}-row batches), ${settings.earnings} earnings rows, ` +
      `${settings.queries} queries`,
  );
  const seedStarted = performance.now();
  const movementIds = await seedPayments(app, platform, settings.payments);
  const seedSeconds = seconds(seedStarted);
  const a = await benchReconcile(app, settings, movementIds);
  const matched = Number(a.statuses.find((s) => s.status === 'matched')?.n ?? 0);
  if (matched !== settings.payments) {
    bench.problem(
      `reconcile: ${matched} of ${settings.payments} matched (${a.statuses.map((s) => `${s.status}: ${s.n}`).join(', ')})`,
    );
  }
  const aMark = bench.target(a.perSecond >= TARGET_RECONCILED_PER_SECOND);
  console.log(
    `\na. reconcile against the localnet over HTTP (setup: ${settings.payments} transfers sent, confirmed and` +
      ` recorded in ${seedSeconds.toFixed(1)} s)`,
  );
  console.log(
    `   ${a.checked} checked in ${a.elapsed.toFixed(2)} s; ${a.statuses.map((s) => `${s.status}: ${s.n}`).join(', ')}`,
  );
  console.log(
    `   ${aMark} ${a.perSecond.toFixed(0).padStart(8)} transactions/s       target >= ${TARGET_RECONCILED_PER_SECOND}`,
  );

  const b = await benchShipping(app, settings);
  if (b.clickhouse !== b.postgres)
    bench.problem(`shipping: Postgres holds ${b.postgres} events, ClickHouse ${b.clickhouse}`);
  if (b.shipped !== settings.events)
    bench.problem(`shipping: shipped ${b.shipped} of ${settings.events} events`);
  const bMark = bench.target(b.perSecond >= TARGET_SHIPPED_PER_SECOND);
  console.log(
    `\nb. event shipping Postgres -> ClickHouse (setup: ${settings.events} events inserted in ${b.insertSeconds.toFixed(1)} s)`,
  );
  console.log(
    `   ${b.shipped} shipped in ${b.elapsed.toFixed(2)} s; ClickHouse holds ${b.clickhouse}, Postgres ${b.postgres}`,
  );
  console.log(
    `   ${bMark} ${b.perSecond.toFixed(0).padStart(8)} events/s             target >= ${TARGET_SHIPPED_PER_SECOND}`,
  );

  const c = await benchEarnings(app, settings);
  if (c.totalMicro <= 0n) bench.problem('earnings: the queries found no earnings');
  const cMark = bench.target(c.p50 < TARGET_EARNINGS_P50_MS);
  console.log(
    `\nc. creatorEarnings over ${settings.earnings} rows, ${CREATORS} creators, ${DAYS} days (setup: inserted in` +
      ` ${c.insertSeconds.toFixed(1)} s; ~${c.rowsPerCreator.toFixed(0)} rows and ${c.bucketsPerQuery.toFixed(0)} daily buckets per creator)`,
  );
  console.log(
    `   ${cMark} p50 ${c.p50.toFixed(1).padStart(6)} ms, p99 ${c.p99.toFixed(1)} ms over ${settings.queries} queries   target p50 < ${TARGET_EARNINGS_P50_MS} ms`,
  );

  console.log('');
  return (
    `reconcile ${a.perSecond.toFixed(0)}/s, shipping ${b.perSecond.toFixed(0)} events/s,` +
    ` earnings p50 ${c.p50.toFixed(1)} ms`
  );
}

runBench(main);
