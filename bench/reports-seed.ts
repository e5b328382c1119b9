import { sql, type Transaction } from 'kysely';
import type { ClickHouse } from '../src/adapters/clickhouse/index.js';
import type { Database } from '../src/adapters/postgres/database.js';
import type { Db } from '../src/adapters/postgres/db.js';
import { historyTypeSql } from '../src/domain/reports/history-types.js';

/*
 * The seed of `npm run bench:reports`: a month of ledger legs written straight into both stores,
 * Postgres (`accounts`, `ledger_accounts`, `ledger_movements`, `ledger_legs`) and ClickHouse
 * (`ledger_legs` with the columns the shipper writes, plus the chain's side the reports join:
 * `chain_transactions` and `reconciliation`), from one model, so both hold the same legs.
 *
 * The model. Movements come in cycles of 20 (the shapes below, as the write path records them:
 * a paid post 2 legs, a reply, quote or repost 3 with the parent author's share, a send 2, a swap
 * 4 in two currencies, a deposit 2, a creator-fund payout 2 in the native token, and one reversal
 * of a failed post per cycle). Leg number n (0-based) is leg `n % 53` of cycle `n / 53`; its
 * movement m, its accounts, its amount and its time are functions of n and m that are written
 * twice, once in Postgres SQL (generate_series) and once in ClickHouse SQL (numbers()), from the
 * same tables here. The payer of movement m is user (m + m / U) % U, the other party
 * (p + 1 + m % (U - 1)) % U (never the payer); movement m happens at
 * start + (m * span) / M milliseconds (M movements spread evenly over the month). Every user gets
 * an opening deposit of 1,000 USDC and 1,000 native tokens the day before the month (legs before
 * the interval: the summary's `opening`), which no user spends in a month.
 *
 * Ids are deterministic: a UUID `<prefix>-0000-4000-8000-<12 hex digits of the number>` per
 * account, ledger account, movement and post, and leg ids from `firstLegId` on (the Postgres
 * sequence is moved past them).
 */

type Role = 'payer' | 'other' | 'treasury' | 'external' | 'swap_pool' | 'creator_fund';
type Shape = 'reply' | 'repost' | 'post' | 'send' | 'reversal' | 'swap' | 'deposit' | 'fund_payout';
interface LegSpec {
  role: Role;
  currency: 'usdc' | 'native';
  /** amount = base + perVariant * (m % 997): a movement's legs use the same variant, so they balance. */
  base: bigint;
  perVariant: bigint;
  counts: 'spent' | 'earned' | 'none';
}

const PRICE = 1_000_000n;
const SHARE = 500_000n;
const SHAPES: Record<Shape, { kind: string; legs: LegSpec[] }> = {
  // A reply or quote to another user's post: the payer pays the price, the parent author earns half.
  reply: {
    kind: 'post',
    legs: [
      { role: 'payer', currency: 'usdc', base: -PRICE, perVariant: 0n, counts: 'spent' },
      { role: 'other', currency: 'usdc', base: SHARE, perVariant: 0n, counts: 'earned' },
      { role: 'treasury', currency: 'usdc', base: PRICE - SHARE, perVariant: 0n, counts: 'none' },
    ],
  },
  repost: {
    kind: 'repost',
    legs: [
      { role: 'payer', currency: 'usdc', base: -PRICE, perVariant: 0n, counts: 'spent' },
      { role: 'other', currency: 'usdc', base: SHARE, perVariant: 0n, counts: 'earned' },
      { role: 'treasury', currency: 'usdc', base: PRICE - SHARE, perVariant: 0n, counts: 'none' },
    ],
  },
  // A top-level post: all to the treasury.
  post: {
    kind: 'post',
    legs: [
      { role: 'payer', currency: 'usdc', base: -PRICE, perVariant: 0n, counts: 'spent' },
      { role: 'treasury', currency: 'usdc', base: PRICE, perVariant: 0n, counts: 'none' },
    ],
  },
  send: {
    kind: 'send',
    legs: [
      { role: 'payer', currency: 'usdc', base: -1_000_000n, perVariant: -1_000n, counts: 'spent' },
      { role: 'other', currency: 'usdc', base: 1_000_000n, perVariant: 1_000n, counts: 'none' },
    ],
  },
  // The reversal of the movement before it (a top-level post whose transaction failed on chain).
  reversal: {
    kind: 'reversal',
    legs: [
      { role: 'payer', currency: 'usdc', base: PRICE, perVariant: 0n, counts: 'spent' },
      { role: 'treasury', currency: 'usdc', base: -PRICE, perVariant: 0n, counts: 'none' },
    ],
  },
  // Native tokens sold to the swap pool for USDC.
  swap: {
    kind: 'swap',
    legs: [
      { role: 'payer', currency: 'native', base: -1_000_000_000n, perVariant: -1_000_000n, counts: 'none' },
      { role: 'swap_pool', currency: 'native', base: 1_000_000_000n, perVariant: 1_000_000n, counts: 'none' },
      { role: 'swap_pool', currency: 'usdc', base: -500_000n, perVariant: -500n, counts: 'none' },
      { role: 'payer', currency: 'usdc', base: 500_000n, perVariant: 500n, counts: 'none' },
    ],
  },
  deposit: {
    kind: 'deposit',
    legs: [
      { role: 'external', currency: 'usdc', base: -5_000_000n, perVariant: -1_000n, counts: 'none' },
      { role: 'payer', currency: 'usdc', base: 5_000_000n, perVariant: 1_000n, counts: 'none' },
    ],
  },
  fund_payout: {
    kind: 'fund_payout',
    legs: [
      { role: 'creator_fund', currency: 'native', base: -250_000_000n, perVariant: -10_000n, counts: 'none' },
      { role: 'payer', currency: 'native', base: 250_000_000n, perVariant: 10_000n, counts: 'earned' },
    ],
  },
};

/** One cycle of 20 movements; slot 9 reverses slot 8 (its post failed on chain). */
const CYCLE: Shape[] = [
  'reply',
  'repost',
  'post',
  'reply',
  'send',
  'reply',
  'repost',
  'reply',
  'post',
  'reversal',
  'repost',
  'reply',
  'send',
  'swap',
  'reply',
  'repost',
  'post',
  'reply',
  'deposit',
  'fund_payout',
];
const FAILED_SLOT = 8;
const REVERSAL_SLOT = 9;

/** Every leg of a cycle, in order: its slot (movement of the cycle) and its spec. */
const CYCLE_LEGS = CYCLE.flatMap((shape, slot) => SHAPES[shape].legs.map((leg) => ({ slot, shape, leg })));
export const LEGS_PER_CYCLE = CYCLE_LEGS.length;
const VARIANTS = 997;
const OPENING_USDC = 1_000_000_000n;
const OPENING_NATIVE = 1_000_000_000_000n;

export const UUID_PREFIX = {
  account: 'b0000001',
  usdcLedger: 'b0000002',
  nativeLedger: 'b0000003',
  movement: 'b0000004',
  post: 'b0000005',
} as const;

/** The handle of bench user u (also what a report prints for it). */
export const userHandle = (u: number): string => `bench_u${u}`;

export interface SeedPlan {
  users: number;
  /** Movements in the month. */
  movements: number;
  /** Legs in the month (whole movements only: the cycles, then the longest prefix of one that fits). */
  legs: number;
  startMs: number;
  endMs: number;
}

/** The plan for about `targetLegs` legs: whole cycles, then as many whole movements of one as fit. */
export function planSeed(targetLegs: number, users: number, startMs: number, endMs: number): SeedPlan {
  const cycles = Math.floor(targetLegs / LEGS_PER_CYCLE);
  let legs = cycles * LEGS_PER_CYCLE;
  let movements = cycles * CYCLE.length;
  for (const shape of CYCLE) {
    const more = SHAPES[shape].legs.length;
    if (legs + more > targetLegs || shape === 'reversal') break; // a reversal never comes without its post
    legs += more;
    movements += 1;
  }
  // A cut after the failed post would leave it unreversed; that is fine (a later cycle would reverse it).
  return { users, movements, legs, startMs, endMs };
}

const list = (values: readonly (string | bigint | number)[], quote: boolean) =>
  values.map((v) => (quote ? `'${String(v)}'` : String(v))).join(', ');

/**
 * The SQL pieces of the model for one dialect: arrays indexed by a leg's place in its cycle, and
 * the integer arithmetic and deterministic ids that other seeds written twice (Postgres and
 * ClickHouse) share (bench/creator-analytics-seed.ts).
 */
export function dialect(kind: 'pg' | 'ch') {
  const arr = (values: readonly (string | bigint | number)[], quote: boolean) =>
    kind === 'pg'
      ? `(ARRAY[${list(values, quote)}]${quote ? '::text[]' : '::bigint[]'})`
      : `[${list(values, quote)}]`;
  const at = (array: string, index: string) =>
    kind === 'pg' ? `${array}[(${index} + 1)::int]` : `${array}[${index} + 1]`;
  const div = (a: string, b: string) => (kind === 'pg' ? `(${a}) / (${b})` : `intDiv(${a}, ${b})`);
  const mod = (a: string, b: string) => `(${a}) % (${b})`;
  const uuid = (prefix: string, expr: string) =>
    kind === 'pg'
      ? `('${prefix}-0000-4000-8000-' || lpad(to_hex(${expr}), 12, '0'))::uuid`
      : `toUUID(concat('${prefix}-0000-4000-8000-', leftPad(lower(hex(toUInt64(${expr}))), 12, '0')))`;
  const signature = (expr: string) =>
    kind === 'pg'
      ? `'bench' || lpad((${expr})::text, 12, '0') || repeat('x', 71)`
      : `concat('bench', leftPad(toString(${expr}), 12, '0'), repeat('x', 71))`;
  return {
    arr,
    at,
    div,
    mod,
    uuid,
    signature,
    slotOfLeg: arr(
      CYCLE_LEGS.map((l) => l.slot),
      false,
    ),
    kindOfLeg: arr(
      CYCLE_LEGS.map((l) => SHAPES[l.shape].kind),
      true,
    ),
    shapeOfLeg: arr(
      CYCLE_LEGS.map((l) => l.shape),
      true,
    ),
    roleOfLeg: arr(
      CYCLE_LEGS.map((l) => l.leg.role),
      true,
    ),
    currencyOfLeg: arr(
      CYCLE_LEGS.map((l) => l.leg.currency),
      true,
    ),
    baseOfLeg: arr(
      CYCLE_LEGS.map((l) => l.leg.base),
      false,
    ),
    variantOfLeg: arr(
      CYCLE_LEGS.map((l) => l.leg.perVariant),
      false,
    ),
    countsOfLeg: arr(
      CYCLE_LEGS.map((l) => l.leg.counts),
      true,
    ),
    kindOfSlot: arr(
      CYCLE.map((shape) => SHAPES[shape].kind),
      true,
    ),
  };
}

/**
 * Legs of the month numbered by `source` (which yields `n`) in a dialect, with n, m (movement
 * number), slot (in its cycle), shape, movement_kind, role, currency, amount, counts, payer,
 * other (user numbers) and at_ms (the movement's time, ms since the epoch).
 */
function legsSql(kind: 'pg' | 'ch', plan: SeedPlan, source: string): string {
  const d = dialect(kind);
  const U = plan.users;
  const span = plan.endMs - plan.startMs;
  const int = (expr: string) => (kind === 'pg' ? `(${expr})::bigint` : `toInt64(${expr})`);
  return `SELECT n, m, slot, shape, movement_kind, role, currency, amount, counts, payer, at_ms,
                 ${d.mod(`payer + 1 + ${d.mod('m', String(Math.max(U - 1, 1)))}`, String(U))} AS other
            FROM (SELECT n, m, slot, shape, movement_kind, role, currency, counts,
                         ${int(d.at(d.baseOfLeg, 'r'))} + ${int(d.at(d.variantOfLeg, 'r'))} * ${int(d.mod('m', String(VARIANTS)))} AS amount,
                         ${d.mod(`m + ${d.div('m', String(U))}`, String(U))} AS payer,
                         ${plan.startMs} + ${d.div(`m * ${span}`, String(plan.movements))} AS at_ms
                    FROM (SELECT n, r, ${d.div('n', String(LEGS_PER_CYCLE))} * ${CYCLE.length} + ${d.at(d.slotOfLeg, 'r')} AS m,
                                 ${d.at(d.slotOfLeg, 'r')} AS slot, ${d.at(d.shapeOfLeg, 'r')} AS shape,
                                 ${d.at(d.kindOfLeg, 'r')} AS movement_kind, ${d.at(d.roleOfLeg, 'r')} AS role,
                                 ${d.at(d.currencyOfLeg, 'r')} AS currency, ${d.at(d.countsOfLeg, 'r')} AS counts
                            FROM (SELECT n, ${d.mod('n', String(LEGS_PER_CYCLE))} AS r FROM ${source}) AS s) AS a) AS b`;
}

/** Whether the stores already hold a seed (a bench runs on a fresh stack; this is a guard). */
export async function seededLegs(db: Db): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*)::text AS n FROM ledger_legs`.execute(db);
  return Number(rows[0]!.n);
}

/**
 * Seeds Postgres in one seedLedgerTransaction (below: the shipper's `legs` cursor moves past the
 * seeded legs, which ClickHouse gets from `seedClickHouse`; triggers off, so the per-row balance
 * check does not take hours over 10 million rows); the seed balances by construction and the bench
 * checks the books after. Returns the first leg id.
 */
export async function seedPostgres(
  db: Db,
  plan: SeedPlan,
  progress: (text: string) => void,
  batch = 1_000_000,
): Promise<number> {
  const d = dialect('pg');
  const U = plan.users;
  return seedLedgerTransaction(db, async (trx, firstLegId) => {
    await seedUsers(trx, U, plan.startMs - 30 * 86_400_000);

    // Movements of the month, then the opening deposits (numbers M + u and M + U + u).
    const time = (ms: string) =>
      `(to_timestamp(0) + ((${ms}) / 1000) * interval '1 second' + ((${ms}) % 1000) * interval '1 millisecond')`;
    const slot = d.mod('m', String(CYCLE.length));
    await sql
      .raw(
        `INSERT INTO ledger_movements (id, kind, idempotency_key, reverses_id, created_at)
         SELECT ${d.uuid(UUID_PREFIX.movement, 'm')}, ${d.at(d.kindOfSlot, slot)},
                CASE WHEN ${slot} = ${CYCLE.indexOf('deposit')} THEN 'deposit:' || ${d.signature('m')} END,
                CASE WHEN ${slot} = ${REVERSAL_SLOT} THEN ${d.uuid(UUID_PREFIX.movement, 'm - 1')} END,
                ${time(`${plan.startMs}::bigint + (m * ${plan.endMs - plan.startMs}) / ${plan.movements}`)}
           FROM generate_series(0::bigint, ${plan.movements - 1}) AS m
         UNION ALL
         SELECT ${d.uuid(UUID_PREFIX.movement, `${plan.movements}::bigint + o`)}, 'deposit',
                'deposit:' || ${d.signature(`${plan.movements}::bigint + o`)}, NULL,
                ${time(`${plan.startMs - 86_400_000}::bigint + o`)}
           FROM generate_series(0::bigint, ${2 * U - 1}) AS o`,
      )
      .execute(trx);
    progress(
      `Postgres: ${U.toLocaleString('en')} accounts, ${(plan.movements + 2 * U).toLocaleString('en')} movements`,
    );

    const platform = `(SELECT kind, currency, id FROM ledger_accounts WHERE account_id IS NULL)`;
    for (let from = 0; from < plan.legs; from += batch) {
      const to = Math.min(plan.legs, from + batch);
      const legs = legsSql('pg', plan, `generate_series(${from}::bigint, ${to - 1}::bigint) AS n`);
      await sql
        .raw(
          `INSERT INTO ledger_legs (id, movement_id, ledger_account_id, amount, counts)
           SELECT ${firstLegId} + l.n, ${d.uuid(UUID_PREFIX.movement, 'l.m')},
                  CASE l.role
                    WHEN 'payer' THEN CASE l.currency WHEN 'usdc' THEN ${d.uuid(UUID_PREFIX.usdcLedger, 'l.payer')}
                                                      ELSE ${d.uuid(UUID_PREFIX.nativeLedger, 'l.payer')} END
                    WHEN 'other' THEN CASE l.currency WHEN 'usdc' THEN ${d.uuid(UUID_PREFIX.usdcLedger, 'l.other')}
                                                      ELSE ${d.uuid(UUID_PREFIX.nativeLedger, 'l.other')} END
                    ELSE p.id END,
                  l.amount, l.counts
             FROM (${legs}) AS l
             LEFT JOIN ${platform} AS p ON p.kind = l.role AND p.currency = l.currency`,
        )
        .execute(trx);
      progress(`Postgres: legs ${to.toLocaleString('en')} / ${plan.legs.toLocaleString('en')}`);
    }
    // Opening deposits: legs plan.legs + 2o + j (o < U: USDC of user o; o >= U: native of user o - U).
    await sql
      .raw(
        `INSERT INTO ledger_legs (id, movement_id, ledger_account_id, amount, counts)
         SELECT ${firstLegId} + ${plan.legs} + 2 * o + j, ${d.uuid(UUID_PREFIX.movement, `${plan.movements}::bigint + o`)},
                CASE WHEN j = 0 THEN (SELECT id FROM ledger_accounts WHERE account_id IS NULL AND kind = 'external'
                                         AND currency = CASE WHEN o < ${U} THEN 'usdc' ELSE 'native' END)
                     WHEN o < ${U} THEN ${d.uuid(UUID_PREFIX.usdcLedger, 'o')}
                     ELSE ${d.uuid(UUID_PREFIX.nativeLedger, `o - ${U}`)} END,
                CASE WHEN o < ${U} THEN ${OPENING_USDC} ELSE ${OPENING_NATIVE} END * CASE WHEN j = 0 THEN -1 ELSE 1 END,
                'none'
           FROM generate_series(0::bigint, ${2 * U - 1}) AS o, generate_series(0, 1) AS j`,
      )
      .execute(trx);
    // The users' stored balances and totals, as recording the movements one by one would have left them.
    await sql`
      UPDATE ledger_accounts a
         SET balance = s.balance, total_spent = s.spent, total_earned = s.earned
        FROM (SELECT ledger_account_id, sum(amount) AS balance,
                     coalesce(-sum(amount) FILTER (WHERE counts = 'spent'), 0) AS spent,
                     coalesce(sum(amount) FILTER (WHERE counts = 'earned'), 0) AS earned
                FROM ledger_legs WHERE id >= ${firstLegId} GROUP BY ledger_account_id) AS s
       WHERE a.id = s.ledger_account_id AND a.kind = 'user'`.execute(trx);
    return firstLegId;
  });
}

/**
 * Runs `seed` in one Postgres transaction that holds the legs shipper's advisory lock, with
 * triggers off (`session_replication_role = replica`: per-row balance checks, counters and foreign
 * keys would take hours over millions of rows; a seed is consistent by construction), and then
 * moves the ledger_legs sequence and the shipper's `legs` cursor past every leg written: the
 * shipper never ships them (the seed writes ClickHouse's side itself), and every leg written after
 * ships as usual. Refuses (throws) when legs written before are not shipped yet: moving the cursor
 * would skip them. `seed` gets the first free leg id.
 */
export async function seedLedgerTransaction<T>(
  db: Db,
  seed: (trx: Transaction<Database>, firstLegId: number) => Promise<T>,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`SET LOCAL session_replication_role = replica`.execute(trx);
    await sql`SET LOCAL statement_timeout = 0`.execute(trx);
    await sql`SELECT pg_advisory_xact_lock(hashtext('ledgerfeed:shipper:legs'))`.execute(trx);
    const { rows: waiting } = await sql<{ n: string }>`
      SELECT count(*)::text AS n FROM ledger_legs l, shipper_cursors c
       WHERE c.stream = 'legs' AND (l.txid, l.id) > (c.last_txid, c.last_seq)`.execute(trx);
    if (Number(waiting[0]!.n) > 0)
      throw new Error(`${waiting[0]!.n} legs are not shipped yet: seed after them`);
    const { rows: maxRows } = await sql<{
      max: string | null;
    }>`SELECT max(id)::text AS max FROM ledger_legs`.execute(trx);
    const result = await seed(trx, Number(maxRows[0]!.max ?? 0) + 1);
    await sql`SELECT setval(pg_get_serial_sequence('ledger_legs', 'id'), (SELECT max(id) FROM ledger_legs))`.execute(
      trx,
    );
    // The shipper's cursor past every seeded leg: they are this transaction's, numbered up to max(id).
    await sql`
      UPDATE shipper_cursors
         SET last_txid = pg_current_xact_id(), last_seq = (SELECT max(id) FROM ledger_legs), updated_at = now()
       WHERE stream = 'legs'`.execute(trx);
    return result;
  });
}

/**
 * Users 0 to `users` - 1 (handle userHandle(u), ids with UUID_PREFIX.account) created at
 * `createdAtMs`, each with a USDC and a native ledger account, inside a seed transaction.
 */
export async function seedUsers(
  trx: Transaction<Database>,
  users: number,
  createdAtMs: number,
): Promise<void> {
  const d = dialect('pg');
  await sql
    .raw(
      `INSERT INTO accounts (id, handle, display_name, wallet_address, created_at)
       SELECT ${d.uuid(UUID_PREFIX.account, 'u')}, 'bench_u' || u, 'Bench user ' || u,
              'BenchWa11et' || lpad(u::text, 33, 'z'), to_timestamp(${createdAtMs / 1000})
         FROM generate_series(0, ${users - 1}) AS u`,
    )
    .execute(trx);
  await sql
    .raw(
      `INSERT INTO ledger_accounts (id, kind, account_id, currency)
       SELECT ${d.uuid(UUID_PREFIX.usdcLedger, 'u')}, 'user', ${d.uuid(UUID_PREFIX.account, 'u')}, 'usdc'
         FROM generate_series(0, ${users - 1}) AS u
       UNION ALL
       SELECT ${d.uuid(UUID_PREFIX.nativeLedger, 'u')}, 'user', ${d.uuid(UUID_PREFIX.account, 'u')}, 'native'
         FROM generate_series(0, ${users - 1}) AS u`,
    )
    .execute(trx);
}

/**
 * Seeds ClickHouse with the same legs (the shipper's columns, 0004's facts included: the history
 * type from the history's one definition, the movement's signature, the post paid for, a send's
 * other party), then one `chain_transactions` row and one verdict per movement with a transaction
 * (the failed post's transaction failed on chain; a deposit's was indexed, not judged), as the
 * indexer and the reconciler would have left them. INSERT ... SELECT FROM numbers() in batches.
 */
export async function seedClickHouse(
  ch: ClickHouse,
  plan: SeedPlan,
  firstLegId: number,
  progress: (text: string) => void,
  batch = 1_000_000,
): Promise<void> {
  const d = dialect('ch');
  const U = plan.users;
  const time = (ms: string) => `fromUnixTimestamp64Milli(toInt64(${ms}), 'UTC')`;
  const legColumns =
    'leg_id, movement_id, movement_kind, account_kind, account_id, amount, counts, created_at, currency, history_type, swap_tx, related_post_id, counterparty_id';
  for (let from = 0; from < plan.legs; from += batch) {
    const count = Math.min(plan.legs, from + batch) - from;
    const legs = legsSql('ch', plan, `(SELECT number AS n FROM numbers(${from}, ${count}))`);
    const account = `multiIf(role = 'payer', ${d.uuid(UUID_PREFIX.account, 'payer')}, role = 'other', ${d.uuid(UUID_PREFIX.account, 'other')}, NULL)`;
    await ch.client.command({
      query: `INSERT INTO ${ch.table('ledger_legs')} (${legColumns})
              SELECT ${firstLegId} + n, ${d.uuid(UUID_PREFIX.movement, 'm')}, movement_kind,
                     if(role IN ('payer', 'other'), 'user', role), ${account}, amount, counts,
                     ${time('at_ms')}, currency, ${historyTypeSql('movement_kind', 'amount')},
                     ${d.signature(`if(shape = 'reversal', m - 1, m)`)},
                     multiIf(shape IN ('reply', 'post'), ${d.uuid(UUID_PREFIX.post, 'm')},
                             shape = 'repost', ${d.uuid(UUID_PREFIX.post, `m - slot`)},
                             shape = 'reversal', ${d.uuid(UUID_PREFIX.post, 'm - 1')}, NULL),
                     multiIf(shape != 'send', NULL, role = 'payer', ${d.uuid(UUID_PREFIX.account, 'other')},
                             ${d.uuid(UUID_PREFIX.account, 'payer')})
                FROM (${legs})`,
    });
    progress(`ClickHouse: legs ${(from + count).toLocaleString('en')} / ${plan.legs.toLocaleString('en')}`);
  }
  await ch.client.command({
    query: `INSERT INTO ${ch.table('ledger_legs')} (${legColumns})
            SELECT ${firstLegId} + ${plan.legs} + 2 * o + j, ${d.uuid(UUID_PREFIX.movement, `${plan.movements} + o`)},
                   'deposit', if(j = 0, 'external', 'user'),
                   if(j = 0, NULL, ${d.uuid(UUID_PREFIX.account, `o % ${U}`)}),
                   if(o < ${U}, ${OPENING_USDC}, ${OPENING_NATIVE}) * if(j = 0, -1, 1), 'none',
                   ${time(`${plan.startMs - 86_400_000} + o`)}, if(o < ${U}, 'usdc', 'native'),
                   'deposit', ${d.signature(`${plan.movements} + o`)}, NULL, NULL
              FROM (SELECT number AS o FROM numbers(${2 * U})) ARRAY JOIN [0, 1] AS j`,
  });
  // The chain's side of each movement with a transaction of its own (not a reversal).
  const slot = `m % ${CYCLE.length}`;
  const at = `${plan.startMs} + intDiv(m * ${plan.endMs - plan.startMs}, ${plan.movements})`;
  for (let from = 0; from < plan.movements; from += batch) {
    const count = Math.min(plan.movements, from + batch) - from;
    const movements = `(SELECT number AS m FROM numbers(${from}, ${count}) WHERE ${slot} != ${REVERSAL_SLOT})`;
    await ch.client.command({
      query: `INSERT INTO ${ch.table('chain_transactions')} (signature, slot, block_time, fee, status, error)
              SELECT ${d.signature('m')}, 1000 + m, ${time(`${at} + 400`)}, 5000,
                     if(${slot} = ${FAILED_SLOT}, 'failed', 'success'),
                     if(${slot} = ${FAILED_SLOT}, '{"InstructionError":[0,{"Custom":1}]}', '')
                FROM ${movements}`,
    });
    await ch.client.command({
      query: `INSERT INTO ${ch.table('reconciliation')}
                (movement_id, signature, ledger_day, status, ledger_amount, chain_amount, commitment, detail, checked_at)
              SELECT ${d.uuid(UUID_PREFIX.movement, 'm')}, ${d.signature('m')}, toDate(${time(at)}),
                     if(${slot} = ${FAILED_SLOT}, 'failed_on_chain', 'matched'), 1000000,
                     if(${slot} = ${FAILED_SLOT}, 0, 1000000), 'finalized', '', ${time(`${at} + 30000`)}
                FROM ${movements} WHERE ${slot} != ${CYCLE.indexOf('deposit')}`,
    });
    progress(
      `ClickHouse: chain side ${(from + count).toLocaleString('en')} / ${plan.movements.toLocaleString('en')} movements`,
    );
  }
}
