import { sql } from 'kysely';
import type { ClickHouse } from '../src/adapters/clickhouse/index.js';
import type { Db } from '../src/adapters/postgres/db.js';
import { dialect, seedLedgerTransaction, seedUsers, UUID_PREFIX } from './reports-seed.js';

/*
 * The seed of `npm run bench:creator-analytics` (issue 51): creators, their posts and the
 * engagement and earnings on those posts over 400 days, written straight into both stores from one
 * model (as bench/reports-seed.ts does, whose dialect, seed transaction and users it reuses).
 *
 * Accounts 0 to A - 1 (`bench_u<n>`): 0 to C - 1 are the creators, account 0 the measured one;
 * C to A - 1 engage and pay. Creator 0 has `measuredPosts` posts, every other `otherPosts`, each
 * creator's spread evenly over the span (post k of P at start + k * span / P).
 *
 * Engagement event i (0 <= i < E, E a multiple of 200) happens at start + i * span / E. Its group
 * g = i / 10 and slot s = i % 10 decide the rest:
 *   type      slots 0-5 a like, 6 an unlike, 7 a reply, 8 a quote, 9 a repost
 *   creator   0 when g % 20 = 0 (5 % of every type), else 1 + (31 g + 7 s) % (C - 1)
 *   post      post k = (7919 g + 104729 s) % (i * P / E + 1) of that creator: one created by then
 *   actor     C + x² / (A - C) with x = 7919 i % (A - C): every engager, the low ones far more often
 * A reply, quote or repost is paid: the creator earns 250,000 + 500 * (g % 997) micro-USD of a
 * price twice that. So E events give E rows of post_engagement and 3E/10 of creator_earnings.
 *
 * ClickHouse: creator_posts (every post), post_engagement (every event) and creator_earnings (every
 * paid one, with source, post_id and payer_id as 0005's view writes them). No ledger_legs or
 * domain_events: the reads measured do not read them (and the views that feed these tables from
 * them are not run).
 *
 * Postgres (one seedLedgerTransaction, so the shipper never ships these legs): the accounts with
 * their ledger accounts; every post (`posts`, each with its paid-post movement: the author's -$1
 * and the treasury's +$1); creator 0's paid engagements as the write path records them (a
 * movement of 3 legs: the payer's -price, creator 0's earned share, the treasury's rest), with the
 * leg ids creator_earnings carries, so a range's earnings can be summed in both stores; and
 * `follows` of creator 0 by the first F engagers, spread over the span. Not in Postgres: the other
 * creators' earnings, the engagers' own reply, quote and repost posts, likes rows, domain events,
 * outbox rows, and stored balances and counters (left at 0: the reads measured do not use them;
 * balances would go negative without deposits, which the seed does not write).
 */

/** Each slot's event type and, for the paid slots, its earnings source (the model above). */
const TYPES = [
  'post.liked',
  'post.liked',
  'post.liked',
  'post.liked',
  'post.liked',
  'post.liked',
  'post.unliked',
  'post.replied',
  'post.quoted',
  'post.reposted',
] as const;
const SOURCES = ['', '', '', '', '', '', '', 'reply', 'quote', 'repost'] as const;
const FIRST_PAID_SLOT = 7;
/** Groups of ten events: every MEASURED_EVERY-th is creator 0's (5 %). */
const MEASURED_EVERY = 20;
const EVENTS_MULTIPLE = 10 * MEASURED_EVERY;
const POST_PRICE_MICRO = 1_000_000;
/** Earnings rows of creators other than 0 take leg ids from firstLegId + this + i (ClickHouse only). */
const OTHER_LEG_OFFSET = 100_000_000_000;

const PREFIX = {
  post: 'c5000001',
  postMovement: 'c5000002',
  engagementMovement: 'c5000003',
  event: 'c5000004',
} as const;

export interface CreatorSeedPlan {
  /** Accounts A: creators first. */
  accounts: number;
  /** Creators C (account 0 is the measured one). */
  creators: number;
  measuredPosts: number;
  otherPosts: number;
  /** Engagement events E (rows of post_engagement), a multiple of 200. */
  events: number;
  /** Rows of creator_earnings: 3E/10. */
  earnings: number;
  /** Of creator 0: engagement events, paid ones (= its earnings rows and Postgres movements). */
  measuredEvents: number;
  measuredPaid: number;
  /** Followers of creator 0 (the first engagers). */
  follows: number;
  startMs: number;
  endMs: number;
}

/** About `targetRows` rows of post_engagement plus creator_earnings (E + 3E/10) over [startMs, endMs). */
export function planCreatorSeed(input: {
  targetRows: number;
  accounts: number;
  creators: number;
  measuredPosts: number;
  otherPosts: number;
  follows: number;
  startMs: number;
  endMs: number;
}): CreatorSeedPlan {
  if (input.creators < 2 || input.accounts <= input.creators)
    throw new Error('the seed needs at least 2 creators and more accounts than creators');
  const events = Math.max(
    EVENTS_MULTIPLE,
    Math.floor((input.targetRows * 10) / 13 / EVENTS_MULTIPLE) * EVENTS_MULTIPLE,
  );
  return {
    accounts: input.accounts,
    creators: input.creators,
    measuredPosts: input.measuredPosts,
    otherPosts: input.otherPosts,
    events,
    earnings: (events * 3) / 10,
    measuredEvents: events / MEASURED_EVERY,
    measuredPaid: (events / EVENTS_MULTIPLE) * 3,
    follows: Math.min(input.follows, input.accounts - input.creators),
    startMs: input.startMs,
    endMs: input.endMs,
  };
}

export const totalPosts = (plan: CreatorSeedPlan): number =>
  plan.measuredPosts + (plan.creators - 1) * plan.otherPosts;

/** The UUID of post n (0 to measuredPosts - 1: creator 0's, oldest first), as both stores hold it. */
export function postUuid(n: number): string {
  return `${PREFIX.post}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
}

/** The UUID of account u (bench/reports-seed.ts's users). */
export function accountUuid(u: number): string {
  return `${UUID_PREFIX.account}-0000-4000-8000-${u.toString(16).padStart(12, '0')}`;
}

/**
 * Events in a dialect, numbered by `source` (which yields `i`): i, g, s, creator, post (its global
 * number), at_ms, actor and amount (micro-USD, the creator's share when the slot is paid).
 */
function eventsSql(kind: 'pg' | 'ch', plan: CreatorSeedPlan, source: string): string {
  const d = dialect(kind);
  const E = plan.events;
  const span = plan.endMs - plan.startMs;
  const engagers = plan.accounts - plan.creators;
  const ifThen = (cond: string, a: string, b: string) =>
    kind === 'pg' ? `CASE WHEN ${cond} THEN ${a} ELSE ${b} END` : `if(${cond}, ${a}, ${b})`;
  const postsOf = ifThen('creator = 0', String(plan.measuredPosts), String(plan.otherPosts));
  const k = d.mod(`g * 7919 + s * 104729`, `${d.div(`i * ${postsOf}`, String(E))} + 1`);
  return `SELECT i, g, s, creator, at_ms, actor, amount,
                 ${ifThen('creator = 0', k, `${plan.measuredPosts} + (creator - 1) * ${plan.otherPosts} + ${k}`)} AS post
            FROM (SELECT i, g, s,
                         ${ifThen(`${d.mod('g', String(MEASURED_EVERY))} = 0`, '0', `1 + ${d.mod('g * 31 + s * 7', String(plan.creators - 1))}`)} AS creator,
                         ${plan.startMs} + ${d.div(`i * ${span}`, String(E))} AS at_ms,
                         ${plan.creators} + ${d.div(`${d.mod(`i * 7919`, String(engagers))} * ${d.mod(`i * 7919`, String(engagers))}`, String(engagers))} AS actor,
                         250000 + 500 * ${d.mod('g', '997')} AS amount
                    FROM (SELECT i, ${d.div('i', '10')} AS g, ${d.mod('i', '10')} AS s FROM ${source}) AS n) AS e`;
}

/** Post n's author and creation time (ms) as columns `author` and `at_ms`, numbered by `source` (yields n). */
function postsSql(kind: 'pg' | 'ch', plan: CreatorSeedPlan, source: string): string {
  const d = dialect(kind);
  const span = plan.endMs - plan.startMs;
  const mp = plan.measuredPosts;
  const op = plan.otherPosts;
  const ifThen = (cond: string, a: string, b: string) =>
    kind === 'pg' ? `CASE WHEN ${cond} THEN ${a} ELSE ${b} END` : `if(${cond}, ${a}, ${b})`;
  return `SELECT n,
                 ${ifThen(`n < ${mp}`, '0', `1 + ${d.div(`n - ${mp}`, String(op))}`)} AS author,
                 ${plan.startMs} + ${ifThen(`n < ${mp}`, d.div(`n * ${span}`, String(mp)), d.div(`${d.mod(`n - ${mp}`, String(op))} * ${span}`, String(op)))} AS at_ms
            FROM ${source}`;
}

const pgTime = (ms: string) =>
  `(to_timestamp(0) + ((${ms}) / 1000) * interval '1 second' + ((${ms}) % 1000) * interval '1 millisecond')`;
const chTime = (ms: string) => `fromUnixTimestamp64Milli(toInt64(${ms}), 'UTC')`;

/**
 * Seeds Postgres (see the model above) in one seedLedgerTransaction; returns the first leg id,
 * which seedCreatorClickHouse needs for creator 0's earnings rows.
 */
export async function seedCreatorPostgres(
  db: Db,
  plan: CreatorSeedPlan,
  progress: (text: string) => void,
): Promise<number> {
  const d = dialect('pg');
  const posts = totalPosts(plan);
  const J = plan.measuredPaid;
  return seedLedgerTransaction(db, async (trx, firstLegId) => {
    await seedUsers(trx, plan.accounts, plan.startMs - 30 * 86_400_000);
    const postRows = postsSql('pg', plan, `generate_series(0::bigint, ${posts - 1}::bigint) AS n`);
    await sql
      .raw(
        `INSERT INTO ledger_movements (id, kind, created_at)
         SELECT ${d.uuid(PREFIX.postMovement, 'n')}, 'post', ${pgTime('at_ms')} FROM (${postRows}) AS p`,
      )
      .execute(trx);
    await sql
      .raw(
        `INSERT INTO posts (id, author_id, type, content, movement_id, created_at)
         SELECT ${d.uuid(PREFIX.post, 'n')}, ${d.uuid(UUID_PREFIX.account, 'author')}, 'post',
                'Bench post ' || n, ${d.uuid(PREFIX.postMovement, 'n')}, ${pgTime('at_ms')}
           FROM (${postRows}) AS p`,
      )
      .execute(trx);
    // Each post paid: the author's -$1 (spent), the treasury's +$1. Legs firstLegId + 3J + 2n + j.
    await sql
      .raw(
        `INSERT INTO ledger_legs (id, movement_id, ledger_account_id, amount, counts)
         SELECT ${firstLegId} + ${3 * J} + 2 * n + j, ${d.uuid(PREFIX.postMovement, 'n')},
                CASE WHEN j = 0 THEN ${d.uuid(UUID_PREFIX.usdcLedger, 'author')}
                     ELSE (SELECT id FROM ledger_accounts WHERE account_id IS NULL AND kind = 'treasury' AND currency = 'usdc') END,
                CASE WHEN j = 0 THEN -${POST_PRICE_MICRO} ELSE ${POST_PRICE_MICRO} END,
                CASE WHEN j = 0 THEN 'spent' ELSE 'none' END
           FROM (${postRows}) AS p, generate_series(0, 1) AS j`,
      )
      .execute(trx);
    progress(`Postgres: ${plan.accounts.toLocaleString('en')} accounts, ${posts.toLocaleString('en')} posts`);

    // Creator 0's paid engagement j (0 <= j < J) is event i = 200 (j / 3) + 7 + j % 3.
    const measured = eventsSql(
      'pg',
      plan,
      `(SELECT ${EVENTS_MULTIPLE} * (j / 3) + ${FIRST_PAID_SLOT} + j % 3 AS i FROM generate_series(0::bigint, ${J - 1}::bigint) AS j) AS js`,
    );
    const numbered = `(SELECT (g / ${MEASURED_EVERY}) * 3 + (s - ${FIRST_PAID_SLOT}) AS j, * FROM (${measured}) AS e) AS m`;
    await sql
      .raw(
        `INSERT INTO ledger_movements (id, kind, created_at)
         SELECT ${d.uuid(PREFIX.engagementMovement, 'j')}, CASE WHEN s = 9 THEN 'repost' ELSE 'post' END,
                ${pgTime('at_ms')}
           FROM ${numbered}`,
      )
      .execute(trx);
    // Legs firstLegId + 3j + r: r 0 the payer's -2 x share, 1 creator 0's share (earned), 2 the treasury's.
    await sql
      .raw(
        `INSERT INTO ledger_legs (id, movement_id, ledger_account_id, amount, counts)
         SELECT ${firstLegId} + 3 * j + r, ${d.uuid(PREFIX.engagementMovement, 'j')},
                CASE r WHEN 0 THEN ${d.uuid(UUID_PREFIX.usdcLedger, 'actor')}
                       WHEN 1 THEN ${d.uuid(UUID_PREFIX.usdcLedger, '0')}
                       ELSE (SELECT id FROM ledger_accounts WHERE account_id IS NULL AND kind = 'treasury' AND currency = 'usdc') END,
                CASE r WHEN 0 THEN -2 * amount ELSE amount END,
                CASE r WHEN 0 THEN 'spent' WHEN 1 THEN 'earned' ELSE 'none' END
           FROM ${numbered}, generate_series(0, 2) AS r`,
      )
      .execute(trx);
    await sql
      .raw(
        `INSERT INTO follows (follower_id, followee_id, created_at)
         SELECT ${d.uuid(UUID_PREFIX.account, `${plan.creators} + f`)}, ${d.uuid(UUID_PREFIX.account, '0')},
                ${pgTime(`${plan.startMs}::bigint + (f * ${plan.endMs - plan.startMs}::bigint) / ${plan.follows}`)}
           FROM generate_series(0::bigint, ${plan.follows - 1}::bigint) AS f`,
      )
      .execute(trx);
    progress(
      `Postgres: creator 0's ${J.toLocaleString('en')} paid engagements (${(3 * J).toLocaleString('en')} legs), ` +
        `${plan.follows.toLocaleString('en')} followers`,
    );
    return firstLegId;
  });
}

/** Seeds ClickHouse (see the model above): INSERT ... SELECT FROM numbers() in batches. */
export async function seedCreatorClickHouse(
  ch: ClickHouse,
  plan: CreatorSeedPlan,
  firstLegId: number,
  progress: (text: string) => void,
  batch = 1_000_000,
): Promise<void> {
  const d = dialect('ch');
  const posts = totalPosts(plan);
  await ch.client.command({
    query: `INSERT INTO ${ch.table('creator_posts')} (author_id, post_id, created_at, kind)
            SELECT ${d.uuid(UUID_PREFIX.account, 'author')}, ${d.uuid(PREFIX.post, 'n')}, ${chTime('at_ms')}, 'post'
              FROM (${postsSql('ch', plan, `(SELECT number AS n FROM numbers(${posts}))`)})`,
  });
  progress(`ClickHouse: ${posts.toLocaleString('en')} posts`);
  const types = `[${TYPES.map((t) => `'${t}'`).join(', ')}]`;
  const sources = `[${SOURCES.map((t) => `'${t}'`).join(', ')}]`;
  for (let from = 0; from < plan.events; from += batch) {
    const count = Math.min(plan.events, from + batch) - from;
    const events = eventsSql('ch', plan, `(SELECT number AS i FROM numbers(${from}, ${count}))`);
    await ch.client.command({
      query: `INSERT INTO ${ch.table('post_engagement')} (post_id, occurred_at, event_id, type, actor_id, delta)
              SELECT ${d.uuid(PREFIX.post, 'post')}, ${chTime('at_ms')}, ${d.uuid(PREFIX.event, 'i')},
                     ${types}[s + 1], ${d.uuid(UUID_PREFIX.account, 'actor')}, if(s = 6, -1, 1)
                FROM (${events})`,
    });
    await ch.client.command({
      query: `INSERT INTO ${ch.table('creator_earnings')}
                (creator_id, created_at, leg_id, movement_kind, amount, source, post_id, payer_id)
              SELECT ${d.uuid(UUID_PREFIX.account, 'creator')}, ${chTime('at_ms')},
                     if(creator = 0, ${firstLegId} + 3 * (intDiv(g, ${MEASURED_EVERY}) * 3 + s - ${FIRST_PAID_SLOT}) + 1,
                        ${firstLegId + OTHER_LEG_OFFSET} + i),
                     if(s = 9, 'repost', 'post'), toInt64(amount), ${sources}[s + 1],
                     ${d.uuid(PREFIX.post, 'post')}, ${d.uuid(UUID_PREFIX.account, 'actor')}
                FROM (${events})
               WHERE s >= ${FIRST_PAID_SLOT}`,
    });
    progress(
      `ClickHouse: engagement ${(from + count).toLocaleString('en')} / ${plan.events.toLocaleString('en')} events`,
    );
  }
}

/** Leg ids of the rows written while the reads run: past every seeded one. */
const LIVE_LEG_BASE = 300_000_000_000;

/**
 * One batch of what the shipper would write while creators read (bench:creator-analytics' writes
 * during the reads): `likes` likes and `paid` paid engagements (reply, quote, repost in turn) at the
 * current time on posts of every creator, each paid one with its creator_earnings row. One INSERT
 * per table, as one shipper batch makes one part. Batch `seq` picks its posts and actors
 * (deterministically, so both tables name the same ones).
 */
export async function insertLiveEngagement(
  ch: ClickHouse,
  plan: CreatorSeedPlan,
  batch: { seq: number; likes: number; paid: number },
): Promise<void> {
  const d = dialect('ch');
  const count = batch.likes + batch.paid;
  if (count === 0) return;
  const engagers = plan.accounts - plan.creators;
  const rows = postsSql(
    'ch',
    plan,
    `(SELECT (${batch.seq} * 7919 + number * 104729) % ${totalPosts(plan)} AS n FROM numbers(${count}))`,
  ).replace(
    'SELECT n,',
    `SELECT n, rowNumberInAllBlocks() AS j,
            ${plan.creators} + (${batch.seq} * 31 + rowNumberInAllBlocks() * 7) % ${engagers} AS actor,`,
  );
  const kinds = `['post.replied', 'post.quoted', 'post.reposted']`;
  await ch.client.command({
    query: `INSERT INTO ${ch.table('post_engagement')} (post_id, occurred_at, event_id, type, actor_id, delta)
            SELECT ${d.uuid(PREFIX.post, 'n')}, now64(3, 'UTC'), generateUUIDv4(j),
                   if(j < ${batch.likes}, 'post.liked', ${kinds}[(j - ${batch.likes}) % 3 + 1]),
                   ${d.uuid(UUID_PREFIX.account, 'actor')}, 1
              FROM (${rows})`,
  });
  if (batch.paid === 0) return;
  await ch.client.command({
    query: `INSERT INTO ${ch.table('creator_earnings')}
              (creator_id, created_at, leg_id, movement_kind, amount, source, post_id, payer_id)
            SELECT ${d.uuid(UUID_PREFIX.account, 'author')}, now64(3, 'UTC'),
                   ${LIVE_LEG_BASE} + ${batch.seq} * 100000 + j,
                   if((j - ${batch.likes}) % 3 = 2, 'repost', 'post'), toInt64(250000),
                   ['reply', 'quote', 'repost'][(j - ${batch.likes}) % 3 + 1],
                   ${d.uuid(PREFIX.post, 'n')}, ${d.uuid(UUID_PREFIX.account, 'actor')}
              FROM (${rows})
             WHERE j >= ${batch.likes}`,
  });
}
