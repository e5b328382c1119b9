import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { shipAll } from './support/report-writing.js';
import { paymentsSettled } from './support/settled.js';

/**
 * What schema/clickhouse/0005 adds, filled by the shipper from real paid writes: each earned leg's
 * source, the creator's post engaged with and the payer (creator_earnings), and every post of
 * every author (creator_posts).
 */
let h: ServiceHarness;
let creator: Member;
let replier: Member;
let reposter: Member;
const ids: { post: string; reply: string; quote: string; repost: string } = {
  post: '',
  reply: '',
  quote: '',
  repost: '',
};

async function created(response: Response): Promise<string> {
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

async function rows<T>(query: string, params: Record<string, unknown>): Promise<T[]> {
  const result = await h.env.app.clickhouse.client.query({
    query,
    query_params: params,
    format: 'JSONEachRow',
  });
  return result.json<T>();
}

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  creator = await h.member('cas_creator', 5_000_000n);
  replier = await h.member('cas_replier', 5_000_000n);
  reposter = await h.member('cas_reposter', 5_000_000n);
  ids.post = await created(await h.call(creator, 'POST', '/posts', { content: 'earns', type: 'post' }));
  ids.reply = await created(
    await h.call(replier, 'POST', '/posts', { content: 'a reply', type: 'reply', parent_id: ids.post }),
  );
  ids.quote = await created(
    await h.call(replier, 'POST', '/posts', { content: 'a quote', type: 'quote', quoted_post_id: ids.post }),
  );
  ids.repost = await created(await h.call(reposter, 'POST', `/posts/${ids.post}/repost`));
  await paymentsSettled(h.env.app.db);
  await shipAll(h.env.app);
}, 120_000);
afterAll(async () => {
  await h?.close();
});

describe('schema/clickhouse/0005', () => {
  test('an earned leg names its source, the creator post engaged with (not the new reply) and the payer', async () => {
    const earned = await rows<{ source: string; post_id: string; payer_id: string; amount: string }>(
      `SELECT source, toString(post_id) AS post_id, toString(payer_id) AS payer_id, toString(amount) AS amount
         FROM ${h.env.app.clickhouse.table('creator_earnings')} FINAL
        WHERE creator_id = {creator:UUID} ORDER BY source`,
      { creator: creator.account.id },
    );
    expect(earned).toEqual([
      { source: 'quote', post_id: ids.post, payer_id: replier.account.id, amount: '500000' },
      { source: 'reply', post_id: ids.post, payer_id: replier.account.id, amount: '500000' },
      { source: 'repost', post_id: ids.post, payer_id: reposter.account.id, amount: '500000' },
    ]);
  });

  test("ledger_legs carries the engagement on every leg of the payment (the payer's debit too)", async () => {
    const legs = await rows<{ engagement: string; account_kind: string; engaged: string; payer: string }>(
      `SELECT engagement, account_kind, toString(engaged_post_id) AS engaged, toString(payer_id) AS payer
         FROM ${h.env.app.clickhouse.table('ledger_legs')} FINAL
        WHERE engagement = 'reply' AND payer_id = {payer:UUID} ORDER BY account_kind`,
      { payer: replier.account.id },
    );
    expect(legs.map((leg) => leg.account_kind)).toEqual(['treasury', 'user', 'user']);
    for (const leg of legs) expect(leg).toMatchObject({ engaged: ids.post, payer: replier.account.id });
    const plain = await rows<{ n: string }>(
      `SELECT toString(count()) AS n FROM ${h.env.app.clickhouse.table('ledger_legs')} FINAL
        WHERE movement_kind = 'post' AND engagement = '' AND engaged_post_id IS NULL AND payer_id IS NULL`,
      {},
    );
    expect(Number(plain[0]?.n)).toBeGreaterThan(0); // the creator's own post pays no one
  });

  test('creator_posts holds every post of each author with its kind and Postgres created_at', async () => {
    const posts = await rows<{ author: string; post: string; kind: string; at: string }>(
      `SELECT toString(author_id) AS author, toString(post_id) AS post, kind,
              toString(toUnixTimestamp64Milli(created_at)) AS at
         FROM ${h.env.app.clickhouse.table('creator_posts')} FINAL
        WHERE author_id IN ({a:UUID}, {b:UUID}, {c:UUID}) ORDER BY kind`,
      { a: creator.account.id, b: replier.account.id, c: reposter.account.id },
    );
    expect(posts.map(({ author, post, kind }) => ({ author, post, kind }))).toEqual([
      { author: creator.account.id, post: ids.post, kind: 'post' },
      { author: replier.account.id, post: ids.quote, kind: 'quote' },
      { author: replier.account.id, post: ids.reply, kind: 'reply' },
      { author: reposter.account.id, post: ids.repost, kind: 'repost' },
    ]);
    const pg = await h.env.app.db
      .selectFrom('posts')
      .select(['id', 'created_at'])
      .where('id', 'in', [ids.post, ids.reply, ids.quote])
      .execute();
    for (const row of pg) {
      expect(posts.find((p) => p.post === row.id)?.at).toBe(String(row.created_at.getTime()));
    }
  });
});
