import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TOP_SUPPORTERS } from '../src/app/analytics/audience.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { shipAll } from './support/report-writing.js';
import { paymentsSettled } from './support/settled.js';

/**
 * A creator's audience (issue 51, item 3) against the real services: engagement through the REST
 * API, shipped to ClickHouse, read back by GraphQL `audience` and REST GET /me/audience. The counts
 * match the engagement rows; top supporters match the creator's earn legs in Postgres per payer, to
 * the micro-dollar, with a tie at the 20th place cut by handle; follows count in the range only.
 */
let h: ServiceHarness;
let creator: Member, other: Member, fanA: Member, fanB: Member, fanC: Member, liker: Member, finance: Member;
let crowd: Member[];
let from: Date;
let to: Date;

const AUDIENCE = `query ($handle: String!, $from: DateTime!, $to: DateTime!) {
  audience(handle: $handle, from: $from, to: $to) {
    uniqueEngagers payingEngagers newFollowers topSupporters { handle paidUsdMicro } } }`;

async function dbNow(): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`SELECT clock_timestamp() AS now`.execute(h.env.app.db);
  return rows[0]!.now;
}

async function ok(response: Promise<Response>): Promise<Response> {
  const answered = await response;
  expect(answered.status, await answered.clone().text()).toBeLessThan(300);
  return answered;
}

async function post(who: Member, body: Record<string, unknown>): Promise<string> {
  return ((await (await ok(h.call(who, 'POST', '/posts', body))).json()) as { id: string }).id;
}

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0', CREATOR_FUND_ENABLED: 'false' });
  const app = h.env.app;
  [creator, other, fanA, fanB, fanC, liker] = await Promise.all([
    h.member('au_creator', 3_000_000n),
    h.member('au_other', 1_000_000n),
    h.member('au_fan_a', 5_000_000n),
    h.member('au_fan_b', 2_000_000n),
    h.member('au_fan_c', 1_000_000n),
    h.member('au_liker', 0n),
  ]);
  // 21 supporters paying $0.50 each, as fanB and fanC: 23 tied behind fanA for 19 places.
  crowd = await Promise.all(
    Array.from({ length: TOP_SUPPORTERS + 1 }, (_, i) =>
      h.member(`au_crowd_${String(i).padStart(2, '0')}`, 1_000_000n),
    ),
  );
  const financeAccount = await createAccount(app, { handle: 'au_finance', role: 'finance' });
  finance = { account: financeAccount, key: (await createApiKey(app.apiKeys, financeAccount.id)).key };

  const first = await post(creator, { type: 'post', content: 'one' });
  const second = await post(creator, { type: 'post', content: 'two' });
  const othersPost = await post(other, { type: 'post', content: 'not the creator' });
  // Before the range: a follow and a like that do not count.
  await ok(h.call(fanA, 'POST', '/users/au_creator/follow'));
  await ok(h.call(other, 'POST', `/posts/${first}/like`));
  await paymentsSettled(app.db);

  from = await dbNow();
  await post(fanA, { type: 'reply', content: 're', parent_id: first });
  await post(fanA, { type: 'quote', content: 'qt', quoted_post_id: first });
  await ok(h.call(fanA, 'POST', `/posts/${second}/repost`));
  await post(fanA, { type: 'reply', content: 'elsewhere', parent_id: othersPost });
  await post(fanB, { type: 'reply', content: 're', parent_id: second });
  await ok(h.call(fanC, 'POST', `/posts/${first}/repost`));
  for (const member of crowd) await ok(h.call(member, 'POST', `/posts/${second}/repost`));
  // Engages without paying: an engager, not a paying one.
  await ok(h.call(liker, 'POST', `/posts/${first}/like`));
  await ok(h.call(liker, 'POST', `/posts/${second}/like`));
  // The creator's own engagement with their posts is not counted.
  await ok(h.call(creator, 'POST', `/posts/${first}/like`));
  await post(creator, { type: 'reply', content: 'self', parent_id: first });
  // Follows in the range: two that stand, one undone.
  await ok(h.call(fanB, 'POST', '/users/au_creator/follow'));
  await ok(h.call(liker, 'POST', '/users/au_creator/follow'));
  await ok(h.call(fanC, 'POST', '/users/au_creator/follow'));
  await ok(h.call(fanC, 'DELETE', '/users/au_creator/follow'));
  await paymentsSettled(app.db);
  to = await dbNow();

  // After the range: none of these count.
  await ok(h.call(fanC, 'POST', '/users/au_creator/follow'));
  await ok(h.call(other, 'POST', `/posts/${second}/like`));
  await post(fanB, { type: 'reply', content: 'late', parent_id: first });
  await paymentsSettled(app.db);
  await shipAll(app);
}, 180_000);
afterAll(async () => {
  await h?.close();
});

/** The creator's earn legs in the Postgres ledger over [from, to), summed per payer (µUSD). */
async function earnLegsPerPayer(): Promise<Map<string, bigint>> {
  const { rows } = await sql<{ handle: string; paid: string }>`
    SELECT pa_acc.handle, sum(l.amount)::text AS paid
      FROM ledger_legs l
      JOIN ledger_accounts a ON a.id = l.ledger_account_id
      JOIN ledger_movements m ON m.id = l.movement_id
      JOIN ledger_legs pl ON pl.movement_id = coalesce(m.reverses_id, m.id) AND pl.counts = 'spent'
      JOIN ledger_accounts pa ON pa.id = pl.ledger_account_id
      JOIN accounts pa_acc ON pa_acc.id = pa.account_id
     WHERE a.account_id = ${creator.account.id}::uuid AND a.currency = 'usdc' AND l.counts = 'earned'
       AND m.created_at >= ${from} AND m.created_at < ${to}
     GROUP BY pa_acc.handle`.execute(h.env.app.db);
  return new Map(rows.map((row) => [row.handle, BigInt(row.paid)]));
}

describe('audience', { timeout: 60_000 }, () => {
  test('counts engagers, payers and new followers of the range; the creator and other creators are not counted', async () => {
    const { data, errors } = await h.gql(creator, AUDIENCE, {
      handle: 'au_creator',
      from: from.toISOString(),
      to: to.toISOString(),
    });
    expect(errors).toBeUndefined();
    const paying = 3 + crowd.length; // fanA, fanB, fanC and the crowd
    expect(data.audience).toMatchObject({
      uniqueEngagers: paying + 1, // and the liker, who paid nothing
      payingEngagers: paying,
      newFollowers: 2, // fanB and the liker; fanC unfollowed, fanA before, fanC again after
    });

    // The same as the engagement rows in ClickHouse: distinct others' actors on the creator's posts.
    const ch = h.env.app.clickhouse;
    const result = await ch.client.query({
      query: `SELECT DISTINCT toString(e.actor_id) AS actor
                FROM ${ch.table('post_engagement')} AS e FINAL
                JOIN ${ch.table('creator_posts')} AS p FINAL ON p.post_id = e.post_id
               WHERE p.author_id = {creator:UUID}
                 AND e.occurred_at >= {from:DateTime64(3, 'UTC')} AND e.occurred_at < {to:DateTime64(3, 'UTC')}
                 AND e.type != 'post.unliked'`,
      query_params: { creator: creator.account.id, from: from.getTime() / 1000, to: to.getTime() / 1000 },
      format: 'JSONEachRow',
    });
    const actors = (await result.json<{ actor: string }>()).map((row) => row.actor);
    expect(actors).toContain(creator.account.id); // the rows hold the self-engagement ...
    expect(actors.filter((id) => id !== creator.account.id)).toHaveLength(data.audience.uniqueEngagers);
    expect(actors).not.toContain(other.account.id); // ... and nothing of before or after the range
  });

  test("top supporters: the creator's earn legs per payer in Postgres to the micro-dollar, most first, the tie cut by handle", async () => {
    const { data, errors } = await h.gql(creator, AUDIENCE, {
      handle: 'au_creator',
      from: from.toISOString(),
      to: to.toISOString(),
    });
    expect(errors).toBeUndefined();
    const legs = await earnLegsPerPayer();
    expect(legs.get('au_fan_a')).toBe(1_500_000n);
    expect(legs.size).toBe(3 + crowd.length);
    const expected = [...legs]
      .sort(([ha, a], [hb, b]) => (a < b ? 1 : a > b ? -1 : ha < hb ? -1 : 1))
      .slice(0, TOP_SUPPORTERS)
      .map(([handle, paid]) => ({ handle, paidUsdMicro: paid.toString() }));
    expect(data.audience.topSupporters).toEqual(expected);
    // fanA first; then 19 of the 23 tied at $0.50, first by handle: the crowd before au_fan_b.
    expect(expected[0]).toEqual({ handle: 'au_fan_a', paidUsdMicro: '1500000' });
    expect(expected.at(-1)).toEqual({ handle: 'au_crowd_18', paidUsdMicro: '500000' });
  });

  test('REST GET /me/audience: the same answer in snake_case, dollars as numbers', async () => {
    const response = await h.call(
      creator,
      'GET',
      `/me/audience?from=${from.toISOString()}&to=${to.toISOString()}`,
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, unknown>;
    const { data } = await h.gql(creator, AUDIENCE, {
      handle: 'au_creator',
      from: from.toISOString(),
      to: to.toISOString(),
    });
    expect(body).toEqual({
      unique_engagers: data.audience.uniqueEngagers,
      paying_engagers: data.audience.payingEngagers,
      new_followers: data.audience.newFollowers,
      top_supporters: (data.audience.topSupporters as Array<{ handle: string; paidUsdMicro: string }>).map(
        (s) => ({ handle: s.handle, paid_usd: Number(s.paidUsdMicro) / 1e6 }),
      ),
    });
    expect((body.top_supporters as unknown[])[0]).toEqual({ handle: 'au_fan_a', paid_usd: 1.5 });
  });

  test("another creator's audience is FORBIDDEN; finance reads any", async () => {
    const vars = { handle: 'au_creator', from: from.toISOString(), to: to.toISOString() };
    const refused = await h.gql(other, AUDIENCE, vars);
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(refused.data?.audience ?? null).toBeNull();
    const read = await h.gql(finance, AUDIENCE, vars);
    expect(read.errors).toBeUndefined();
    expect(read.data.audience.payingEngagers).toBe(3 + crowd.length);
  });

  test('a range over 400 days is a JSON 400 (REST) and a GraphQL error naming the limit; an empty range answers zeros', async () => {
    const longFrom = new Date(to.getTime() - 401 * 86_400_000).toISOString();
    const response = await h.call(creator, 'GET', `/me/audience?from=${longFrom}&to=${to.toISOString()}`);
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/application\/json/);
    expect(JSON.stringify(await response.json())).toMatch(/400 days/);
    const refused = await h.gql(creator, AUDIENCE, {
      handle: 'au_creator',
      from: longFrom,
      to: to.toISOString(),
    });
    expect(refused.errors?.[0]?.message).toMatch(/400 days/);

    const before = new Date(from.getTime() - 3_600_000);
    const { data } = await h.gql(creator, AUDIENCE, {
      handle: 'au_creator',
      from: new Date(before.getTime() - 3_600_000).toISOString(),
      to: before.toISOString(),
    });
    expect(data.audience).toEqual({
      uniqueEngagers: 0,
      payingEngagers: 0,
      newFollowers: 0,
      topSupporters: [],
    });
  });
});
