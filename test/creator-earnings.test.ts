import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventsShippedThrough } from '../src/app/creator-fund/engagement-source.js';
import { rewindShipper } from '../src/app/indexer/event-shipper.js';
import { planEpoch, settleEpoch, type CreatorFundDeps } from '../src/app/creator-fund/run-epoch.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { shipAll } from './support/report-writing.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';
import { until } from './support/until.js';

/**
 * creatorEarnings (GraphQL) and GET /me/earnings (REST) against the real services: a creator's two
 * posts earn from a reply, a quote and two reposts by two other members; a received send and a
 * creator-fund payout (native tokens) sit beside them and are not USDC earnings. The earning
 * movements are moved to fixed past instants around a Los Angeles midnight, Monday and 1st (in
 * Postgres, then shipped again), so the UTC and local buckets differ; every split sums to the
 * ledger's earned USDC legs to the micro-dollar.
 */
const PAYOUT = 7_000_000_000n; // 7 native tokens

let h: ServiceHarness;
let creator: Member;
let fanA: Member;
let fanB: Member;
let other: Member;
let finance: Member;
const posts = { first: '', second: '' };
/** The creator's earn leg movements moved to these instants (source → when). */
const AT = {
  // Sunday 2025-06-29 23:30 in Los Angeles (PDT, UTC-7); Monday 2025-06-30 in UTC.
  reply: new Date('2025-06-30T06:30:00Z'),
  // Monday 2025-06-30 00:30 in Los Angeles: the next local day and week.
  quote: new Date('2025-06-30T07:30:00Z'),
  // Monday 2025-06-30 20:00 in Los Angeles (June), Tuesday 2025-07-01 in UTC (July).
  repostOfSecond: new Date('2025-07-01T03:00:00Z'),
  // 2025-07-15 in both.
  repostOfFirst: new Date('2025-07-15T12:00:00Z'),
};
const FROM = '2025-06-01T00:00:00Z';
const TO = '2025-08-01T00:00:00Z';

const QUERY = `query ($handle: String!, $from: DateTime!, $to: DateTime!, $g: EarningsGranularity!, $tz: String, $by: EarningsGroupBy) {
  creatorEarnings(handle: $handle, from: $from, to: $to, granularity: $g, timezone: $tz, groupBy: $by) {
    bucket amountUsdMicro source postId } }`;

interface Bucket {
  bucket: string;
  amountUsdMicro: string;
  source: string | null;
  postId: string | null;
}

async function earnings(
  vars: { g: string; tz?: string; by?: string; from?: string; to?: string; handle?: string },
  who: Member = creator,
): Promise<Bucket[]> {
  const answer = await h.gql(who, QUERY, {
    handle: vars.handle ?? 'ce_creator',
    from: vars.from ?? FROM,
    to: vars.to ?? TO,
    g: vars.g,
    tz: vars.tz,
    by: vars.by,
  });
  expect(answer.errors).toBeUndefined();
  return answer.data.creatorEarnings as Bucket[];
}

const total = (buckets: Bucket[]) => buckets.reduce((sum, b) => sum + BigInt(b.amountUsdMicro), 0n);

/** Σ of the creator's earned legs in the Postgres ledger over [from, to), per currency. */
async function ledgerEarned(from: Date, to: Date, currency: 'usdc' | 'native'): Promise<bigint> {
  const { rows } = await sql<{ sum: string | null }>`
    SELECT sum(l.amount)::text AS sum
      FROM ledger_legs l
      JOIN ledger_movements m ON m.id = l.movement_id
      JOIN ledger_accounts a ON a.id = l.ledger_account_id
     WHERE a.account_id = ${creator.account.id} AND a.currency = ${currency} AND l.counts = 'earned'
       AND m.created_at >= ${from} AND m.created_at < ${to}`.execute(h.env.app.db);
  return BigInt(rows[0]?.sum ?? '0');
}

async function createdId(response: Response): Promise<string> {
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

/** The movement that paid the creator for the engagement `id` (a reply/quote post or a repost). */
async function movementOf(table: 'posts' | 'reposts', id: string): Promise<string> {
  const row = await h.env.app.db
    .selectFrom(table)
    .select('movement_id')
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return row.movement_id;
}

beforeAll(async () => {
  h = await openServiceHarness({
    RATE_LIMIT_MULTIPLIER: '0',
    // The epoch is paid by this test (planEpoch/settleEpoch), not by the scheduled job.
    CREATOR_FUND_ENABLED: 'false',
    CREATOR_FUND_EPOCH_BUDGET: PAYOUT.toString(),
  });
  const app = h.env.app;
  creator = await h.member('ce_creator', 3_000_000n);
  fanA = await h.member('ce_fan_a', 5_000_000n);
  fanB = await h.member('ce_fan_b', 5_000_000n);
  other = await h.member('ce_other', 1_000_000n);
  const financeAccount = await createAccount(app, { handle: 'ce_finance', role: 'finance' });
  finance = { account: financeAccount, key: (await createApiKey(app.apiKeys, financeAccount.id)).key };

  posts.first = await createdId(await h.call(creator, 'POST', '/posts', { type: 'post', content: 'one' }));
  posts.second = await createdId(await h.call(creator, 'POST', '/posts', { type: 'post', content: 'two' }));
  await paymentsSettled(app.db);
  const epochStart = new Date(Date.now() - 1);
  const reply = await createdId(
    await h.call(fanA, 'POST', '/posts', { type: 'reply', content: 're', parent_id: posts.first }),
  );
  const quote = await createdId(
    await h.call(fanB, 'POST', '/posts', { type: 'quote', content: 'qt', quoted_post_id: posts.first }),
  );
  const repostOfSecond = await createdId(await h.call(fanB, 'POST', `/posts/${posts.second}/repost`));
  const repostOfFirst = await createdId(await h.call(fanA, 'POST', `/posts/${posts.first}/repost`));
  expect(
    (await h.call(fanA, 'POST', '/send', { to_handle: 'ce_creator', amount_usd: 0.25, memo: 'tip' })).status,
  ).toBe(201);
  await paymentsSettled(app.db);

  // A creator-fund payout of native tokens to the creator (as test/report-fund-payout.test.ts).
  const deps: CreatorFundDeps = { ...app, logger: pino({ level: 'silent' }) };
  const epochEnd = new Date(Date.now() + 1);
  await until(
    "the epoch's events shipped to ClickHouse",
    () => eventsShippedThrough(app.db, epochEnd),
    Boolean,
    30_000,
  );
  const plan = await planEpoch(deps, { start: epochStart, end: epochEnd });
  expect(plan).toMatchObject({ outcome: 'planned', paidTotal: PAYOUT });
  expect(await settleEpoch(deps, plan)).toEqual(['confirmed']);
  await paymentsSettled(app.db);

  // The earning movements move to fixed past instants, in Postgres; ClickHouse drops what it had of
  // the creator's earnings (keyed by time, so a moved leg would otherwise land twice) and takes
  // everything again from the rewound shipper.
  const moves: Array<[string, Date]> = [
    [await movementOf('posts', reply), AT.reply],
    [await movementOf('posts', quote), AT.quote],
    [await movementOf('reposts', repostOfSecond), AT.repostOfSecond],
    [await movementOf('reposts', repostOfFirst), AT.repostOfFirst],
  ];
  for (const [movementId, at] of moves) {
    await sql`UPDATE ledger_movements SET created_at = ${at} WHERE id = ${movementId}`.execute(app.db);
  }
  await shipAll(app);
  await app.clickhouse.client.command({
    query: `DELETE FROM ${app.clickhouse.table('creator_earnings')} WHERE creator_id = {creator:UUID}`,
    query_params: { creator: creator.account.id },
  });
  await rewindShipper(app.db);
  await shipAll(app);
}, 180_000);
afterAll(async () => {
  await h?.close();
});

describe('creatorEarnings', { timeout: 60_000 }, () => {
  test('by source = by post = the total = the earned USDC legs of the ledger, to the micro-dollar (UTC days)', async () => {
    const ledger = await ledgerEarned(new Date(FROM), new Date(TO), 'usdc');
    expect(ledger).toBe(2_000_000n); // 4 × $0.50
    const none = await earnings({ g: 'DAY' });
    expect(none).toEqual([
      { bucket: '2025-06-30T00:00:00.000Z', amountUsdMicro: '1000000', source: null, postId: null },
      { bucket: '2025-07-01T00:00:00.000Z', amountUsdMicro: '500000', source: null, postId: null },
      { bucket: '2025-07-15T00:00:00.000Z', amountUsdMicro: '500000', source: null, postId: null },
    ]);
    const bySource = await earnings({ g: 'DAY', by: 'SOURCE' });
    expect(bySource.map((b) => [b.bucket.slice(0, 10), b.source, b.amountUsdMicro])).toEqual([
      ['2025-06-30', 'QUOTE', '500000'],
      ['2025-06-30', 'REPLY', '500000'],
      ['2025-07-01', 'REPOST', '500000'],
      ['2025-07-15', 'REPOST', '500000'],
    ]);
    const byPost = await earnings({ g: 'MONTH', by: 'POST' });
    const perPost = new Map<string, bigint>();
    for (const b of byPost) perPost.set(b.postId!, (perPost.get(b.postId!) ?? 0n) + BigInt(b.amountUsdMicro));
    expect(Object.fromEntries(perPost)).toEqual({ [posts.first]: 1_500_000n, [posts.second]: 500_000n });
    for (const split of [none, bySource, byPost]) expect(total(split)).toBe(ledger);
  });

  test('in Los Angeles the day, week and month start at local midnight: the reply and the quote fall on two days', async () => {
    const tz = 'America/Los_Angeles';
    const days = await earnings({ g: 'DAY', tz, by: 'SOURCE' });
    expect(days.map((b) => [b.bucket, b.source, b.amountUsdMicro])).toEqual([
      ['2025-06-29T07:00:00.000Z', 'REPLY', '500000'],
      ['2025-06-30T07:00:00.000Z', 'QUOTE', '500000'],
      ['2025-06-30T07:00:00.000Z', 'REPOST', '500000'],
      ['2025-07-15T07:00:00.000Z', 'REPOST', '500000'],
    ]);
    const weeks = await earnings({ g: 'WEEK', tz });
    expect(weeks.map((b) => [b.bucket, b.amountUsdMicro])).toEqual([
      ['2025-06-23T07:00:00.000Z', '500000'], // Monday June 23, local
      ['2025-06-30T07:00:00.000Z', '1000000'],
      ['2025-07-14T07:00:00.000Z', '500000'],
    ]);
    const months = await earnings({ g: 'MONTH', tz });
    expect(months.map((b) => [b.bucket, b.amountUsdMicro])).toEqual([
      ['2025-06-01T07:00:00.000Z', '1500000'],
      ['2025-07-01T07:00:00.000Z', '500000'],
    ]);
    const ledger = await ledgerEarned(new Date(FROM), new Date(TO), 'usdc');
    for (const split of [days, weeks, months]) expect(total(split)).toBe(ledger);
    // Hours (at most 31 days): per post, the same sum as the ledger over the same range.
    const hours = { from: '2025-06-29T00:00:00Z', to: '2025-07-29T00:00:00Z' };
    const byPost = await earnings({ g: 'HOUR', tz, by: 'POST', ...hours });
    expect(byPost.map((b) => b.bucket)).toContain('2025-06-30T06:00:00.000Z');
    expect(total(byPost)).toBe(await ledgerEarned(new Date(hours.from), new Date(hours.to), 'usdc'));
    // A local [from, to) that cuts between the reply and the quote: only the quote's day and on.
    const fromLocalMonday = await earnings({ g: 'DAY', tz, from: '2025-06-30T07:00:00Z' });
    expect(total(fromLocalMonday)).toBe(
      await ledgerEarned(new Date('2025-06-30T07:00:00Z'), new Date(TO), 'usdc'),
    );
    expect(total(fromLocalMonday)).toBe(1_500_000n);
  });

  test('UTC weeks and months: Monday 00:00 and the 1st 00:00 UTC', async () => {
    const weeks = await earnings({ g: 'WEEK' });
    expect(weeks.map((b) => [b.bucket, b.amountUsdMicro])).toEqual([
      ['2025-06-30T00:00:00.000Z', '1500000'],
      ['2025-07-14T00:00:00.000Z', '500000'],
    ]);
    const months = await earnings({ g: 'MONTH' });
    expect(months.map((b) => [b.bucket, b.amountUsdMicro])).toEqual([
      ['2025-06-01T00:00:00.000Z', '1000000'],
      ['2025-07-01T00:00:00.000Z', '1000000'],
    ]);
  });

  test('the fund payout (native tokens) and the received send are not USDC earnings', async () => {
    const now = Date.now();
    const from = new Date(now - 86_400_000);
    const to = new Date(now + 86_400_000);
    expect(await ledgerEarned(from, to, 'native')).toBe(PAYOUT);
    expect(await ledgerEarned(from, to, 'usdc')).toBe(0n);
    expect(await earnings({ g: 'HOUR', from: from.toISOString(), to: to.toISOString() })).toEqual([]);
    const wide = await earnings({ g: 'MONTH', to: to.toISOString() });
    expect(total(wide)).toBe(2_000_000n);
  });

  test('finance reads any creator; another creator is FORBIDDEN; a range past the limit is BAD_USER_INPUT naming it', async () => {
    expect(total(await earnings({ g: 'DAY' }, finance))).toBe(2_000_000n);
    const forbidden = await h.gql(other, QUERY, { handle: 'ce_creator', from: FROM, to: TO, g: 'DAY' });
    expect(forbidden.errors?.[0]?.extensions.code).toBe('FORBIDDEN');
    const limits: Array<[string, string, string]> = [
      ['HOUR', '2025-07-02T00:00:01Z', '31 days'],
      ['DAY', '2026-07-06T00:00:01Z', '400 days'],
      ['WEEK', '2030-06-01T00:00:01Z', '5 years'],
      ['MONTH', '2030-06-01T00:00:01Z', '5 years'],
    ];
    for (const [g, to, label] of limits) {
      const answer = await h.gql(creator, QUERY, { handle: 'ce_creator', from: FROM, to, g });
      expect(answer.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
      expect(answer.errors?.[0]?.message).toContain(label);
    }
    // At the limit exactly: answered.
    expect(await earnings({ g: 'MONTH', to: '2030-06-01T00:00:00Z' })).toHaveLength(2);
    const badZone = await h.gql(creator, QUERY, {
      handle: 'ce_creator',
      from: FROM,
      to: TO,
      g: 'DAY',
      tz: 'Mars/Olympus',
    });
    expect(badZone.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
  });
});

describe('GET /api/v1/me/earnings', { timeout: 60_000 }, () => {
  test('the same buckets as GraphQL, in dollars, sources in lower case; post_id when grouped by post', async () => {
    const tz = 'America/Los_Angeles';
    const q = (params: Record<string, string>) =>
      `/me/earnings?${new URLSearchParams({ from: FROM, to: TO, ...params })}`;
    const bySource = await h.call(
      creator,
      'GET',
      q({ granularity: 'day', timezone: tz, group_by: 'source' }),
    );
    expect(bySource.status).toBe(200);
    expect(await bySource.json()).toEqual({
      buckets: [
        { bucket: '2025-06-29T07:00:00.000Z', amount_usd: 0.5, source: 'reply' },
        { bucket: '2025-06-30T07:00:00.000Z', amount_usd: 0.5, source: 'quote' },
        { bucket: '2025-06-30T07:00:00.000Z', amount_usd: 0.5, source: 'repost' },
        { bucket: '2025-07-15T07:00:00.000Z', amount_usd: 0.5, source: 'repost' },
      ],
    });
    const months = await h.call(creator, 'GET', q({ granularity: 'month' }));
    expect(await months.json()).toEqual({
      buckets: [
        { bucket: '2025-06-01T00:00:00.000Z', amount_usd: 1 },
        { bucket: '2025-07-01T00:00:00.000Z', amount_usd: 1 },
      ],
    });
    const byPost = (await (
      await h.call(creator, 'GET', q({ granularity: 'week', group_by: 'post' }))
    ).json()) as {
      buckets: Array<{ post_id: string; amount_usd: number }>;
    };
    expect(new Set(byPost.buckets.map((b) => b.post_id))).toEqual(new Set([posts.first, posts.second]));
    // Local dates for from and to are read in the timezone: June in Los Angeles.
    const june = await h.call(
      creator,
      'GET',
      `/me/earnings?from=2025-06-01&to=2025-07-01&granularity=month&timezone=${tz}`,
    );
    expect(await june.json()).toEqual({ buckets: [{ bucket: '2025-06-01T07:00:00.000Z', amount_usd: 1.5 }] });
  });

  test('a range past the limit is a 400 {error, message} naming it; a bad granularity too', async () => {
    const long = await h.call(
      creator,
      'GET',
      `/me/earnings?from=${FROM}&to=2025-07-03T00:00:00Z&granularity=hour`,
    );
    expect(long.status).toBe(400);
    const body = (await long.json()) as { error: string; message: string };
    expect(body.error).toBe('invalid_request');
    expect(body.message).toContain('31 days');
    const bad = await h.call(creator, 'GET', `/me/earnings?from=${FROM}&to=${TO}&granularity=year`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: expect.any(String), message: expect.any(String) });
  });
});
