import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { shipAll } from './support/report-writing.js';
import { paymentsSettled } from './support/settled.js';

/**
 * Every post's earnings (postEarnings, GET /me/posts/earnings) and one post's over time (postStats
 * with a range), against the real stores: paid replies, quotes and reposts through REST, settled
 * by the worker, shipped to ClickHouse, then read back and held to the ledger in Postgres.
 */
let h: ServiceHarness;
let creator: Member;
let bob: Member;
let carol: Member;
let outsider: Member;
let finance: Member;
/** The creator's posts, oldest first. */
const posts: string[] = [];
let from: Date;
let to: Date;

const POSTS = 7;
const PAGE = 3;

async function created(response: Response): Promise<string> {
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  from = new Date(Date.now() - 1000);
  creator = await h.member('pe_creator', 20_000_000n);
  bob = await h.member('pe_bob', 20_000_000n);
  carol = await h.member('pe_carol', 20_000_000n);
  outsider = await h.member('pe_outsider', 0n);
  const financeAccount = await createAccount(h.env.app, { handle: 'pe_finance', role: 'finance' });
  finance = { account: financeAccount, key: (await createApiKey(h.env.app.apiKeys, financeAccount.id)).key };
  for (let i = 0; i < POSTS; i++) {
    posts.push(
      await created(await h.call(creator, 'POST', '/posts', { content: `post ${i}`, type: 'post' })),
    );
  }
  const reply = (who: Member, parent: string) =>
    h.call(who, 'POST', '/posts', { content: 'a reply', type: 'reply', parent_id: parent });
  const quote = (who: Member, quoted: string) =>
    h.call(who, 'POST', '/posts', { content: 'a quote', type: 'quote', quoted_post_id: quoted });
  const repost = (who: Member, post: string) => h.call(who, 'POST', `/posts/${post}/repost`);
  // post 0: 2 replies + 1 repost ($1.50); post 1: 1 quote + 1 reply ($1); post 2: 1 repost ($0.50);
  // post 3: 1 quote ($0.50); post 4: likes only; posts 5 and 6: nothing.
  await created(await reply(bob, posts[0]!));
  await created(await reply(carol, posts[0]!));
  await created(await repost(carol, posts[0]!));
  await created(await quote(bob, posts[1]!));
  await created(await reply(carol, posts[1]!));
  await created(await repost(bob, posts[2]!));
  await created(await quote(carol, posts[3]!));
  for (const who of [bob, carol])
    expect((await h.call(who, 'POST', `/posts/${posts[4]}/like`)).status).toBe(200);
  expect((await h.call(bob, 'POST', `/posts/${posts[1]}/like`)).status).toBe(200);
  expect((await h.call(bob, 'DELETE', `/posts/${posts[1]}/like`)).status).toBe(200);
  // The creator's own reply on an own post pays nothing to itself, and is a post of its own.
  posts.push(await created(await reply(creator, posts[0]!)));
  await paymentsSettled(h.env.app.db);
  await shipAll(h.env.app);
  to = new Date(Date.now() + 1000);
}, 180_000);
afterAll(async () => {
  await h?.close();
});

/** The creator's earned USDC legs in Postgres over [from, to): the ledger's own total. */
async function ledgerEarned(accountId: string, range: { from: Date; to: Date }): Promise<bigint> {
  const { rows } = await sql<{ total: string }>`
    SELECT coalesce(sum(l.amount), 0)::text AS total
      FROM ledger_legs l
      JOIN ledger_accounts la ON la.id = l.ledger_account_id
      JOIN ledger_movements m ON m.id = l.movement_id
     WHERE la.account_id = ${accountId}::uuid AND la.currency = 'usdc' AND l.counts = 'earned'
       AND m.created_at >= ${range.from} AND m.created_at < ${range.to}`.execute(h.env.app.db);
  return BigInt(rows[0]!.total);
}

interface Node {
  postId: string;
  post: { id: string; content: string } | null;
  earnedUsdMicro: string;
  likes: number;
  replies: number;
  quotes: number;
  reposts: number;
}

interface Connection {
  edges: Array<{ node: Node }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

const PAGE_QUERY = `query ($handle: String!, $from: DateTime!, $to: DateTime!, $order: PostEarningsOrder!, $first: Int, $after: String) {
  postEarnings(handle: $handle, from: $from, to: $to, orderBy: $order, first: $first, after: $after) {
    edges { node { postId post { id content } earnedUsdMicro likes replies quotes reposts } }
    pageInfo { hasNextPage endCursor }
  }
}`;

/** Every page of postEarnings in `order`, PAGE at a time. */
async function allPages(who: Member, order: string, handle = 'pe_creator'): Promise<Node[][]> {
  const pages: Node[][] = [];
  let after: string | null = null;
  for (;;) {
    const { data, errors } = await h.gql(who, PAGE_QUERY, {
      handle,
      from: from.toISOString(),
      to: to.toISOString(),
      order,
      first: PAGE,
      after,
    });
    expect(errors).toBeUndefined();
    const connection = data.postEarnings as Connection;
    pages.push(connection.edges.map((edge) => edge.node));
    if (!connection.pageInfo.hasNextPage) return pages;
    after = connection.pageInfo.endCursor;
    expect(after).toBeTruthy();
  }
}

const engagementOf = (node: Node) => node.likes + node.replies + node.quotes + node.reposts;

describe('postEarnings', () => {
  test('EARNED visits every post once over pages; Σ earned = the ledger’s earned legs to the micro-dollar', async () => {
    const pages = await allPages(creator, 'EARNED');
    expect(pages.length).toBe(Math.ceil(posts.length / PAGE));
    const nodes = pages.flat();
    expect(nodes.map((node) => node.postId).sort()).toEqual([...posts].sort());
    const sum = nodes.reduce((total, node) => total + BigInt(node.earnedUsdMicro), 0n);
    const ledger = await ledgerEarned(creator.account.id, { from, to });
    expect(ledger).toBe(3_500_000n);
    expect(sum).toBe(ledger);
    const byId = new Map(nodes.map((node) => [node.postId, node]));
    expect(byId.get(posts[0]!)).toMatchObject({
      earnedUsdMicro: '1500000',
      replies: 3,
      reposts: 1,
      quotes: 0,
    });
    expect(byId.get(posts[1]!)).toMatchObject({ earnedUsdMicro: '1000000', replies: 1, quotes: 1, likes: 0 });
    expect(byId.get(posts[2]!)).toMatchObject({ earnedUsdMicro: '500000', reposts: 1 });
    expect(byId.get(posts[3]!)).toMatchObject({ earnedUsdMicro: '500000', quotes: 1 });
    expect(byId.get(posts[4]!)).toMatchObject({ earnedUsdMicro: '0', likes: 2 });
    // Highest first; equal earnings newest first; the posts that earned nothing last, newest first.
    expect(nodes.map((node) => node.postId)).toEqual([
      posts[0],
      posts[1],
      posts[3],
      posts[2],
      posts[7],
      posts[6],
      posts[5],
      posts[4],
    ]);
    for (const node of nodes) expect(node.post?.id).toBe(node.postId);
    expect(byId.get(posts[7]!)?.post?.content).toBe('a reply');
  });

  test('counts match the engagement rows in ClickHouse, post by post', async () => {
    const ch = h.env.app.clickhouse;
    const result = await ch.client.query({
      query: `SELECT toString(post_id) AS id, type, toString(sum(delta)) AS n
                FROM ${ch.table('post_engagement')} FINAL
               WHERE post_id IN {ids:Array(UUID)} GROUP BY post_id, type`,
      query_params: { ids: posts },
      format: 'JSONEachRow',
    });
    const expected = new Map(posts.map((id) => [id, { likes: 0, replies: 0, quotes: 0, reposts: 0 }]));
    for (const row of await result.json<{ id: string; type: string; n: string }>()) {
      const counts = expected.get(row.id)!;
      const n = Number(row.n);
      if (row.type === 'post.liked' || row.type === 'post.unliked') counts.likes += n;
      else if (row.type === 'post.replied') counts.replies += n;
      else if (row.type === 'post.quoted') counts.quotes += n;
      else if (row.type === 'post.reposted') counts.reposts += n;
    }
    for (const node of (await allPages(creator, 'NEWEST')).flat()) {
      expect({
        likes: node.likes,
        replies: node.replies,
        quotes: node.quotes,
        reposts: node.reposts,
      }).toEqual(expected.get(node.postId));
    }
  });

  test('ENGAGEMENT and NEWEST visit every post exactly once, in their order', async () => {
    const engagement = (await allPages(creator, 'ENGAGEMENT')).flat();
    expect(engagement.map((node) => node.postId).sort()).toEqual([...posts].sort());
    // post 0: 3 replies + 1 repost; posts 4 (2 likes) and 1 (a quote, a reply, a like taken back)
    // tie at 2, the newer first; so do posts 3 and 2 at 1; the rest had no engagement.
    expect(engagement.map((node) => node.postId)).toEqual([
      posts[0],
      posts[4],
      posts[1],
      posts[3],
      posts[2],
      posts[7],
      posts[6],
      posts[5],
    ]);
    const scores = engagement.map(engagementOf);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    const newest = (await allPages(creator, 'NEWEST')).flat();
    expect(newest.map((node) => node.postId)).toEqual([...posts].reverse());
  });

  test('GET /me/posts/earnings pages with next_cursor, dollars as numbers; a tampered cursor is a JSON 400', async () => {
    const seen: string[] = [];
    let total = 0n;
    let cursor: string | undefined;
    for (;;) {
      const query = new URLSearchParams({
        from: from.toISOString(),
        to: to.toISOString(),
        order_by: 'earned',
        limit: String(PAGE),
        ...(cursor ? { cursor } : {}),
      });
      const response = await h.call(creator, 'GET', `/me/posts/earnings?${query}`);
      expect(response.status).toBe(200);
      const body = (await response.json()) as {
        posts: Array<{ post_id: string; post: { id: string } | null; earned_usd: number; replies: number }>;
        has_more: boolean;
        next_cursor?: string;
      };
      for (const row of body.posts) {
        seen.push(row.post_id);
        expect(row.post?.id).toBe(row.post_id);
        total += BigInt(Math.round(row.earned_usd * 1_000_000));
      }
      if (!body.has_more) {
        expect(body.next_cursor).toBeUndefined();
        break;
      }
      cursor = body.next_cursor!;
    }
    expect(seen.sort()).toEqual([...posts].sort());
    expect(total).toBe(await ledgerEarned(creator.account.id, { from, to }));

    const first = (await (
      await h.call(
        creator,
        'GET',
        `/me/posts/earnings?from=${from.toISOString()}&to=${to.toISOString()}&limit=2`,
      )
    ).json()) as { next_cursor: string };
    const [payload, mac] = first.next_cursor.split('.') as [string, string];
    const forged = Buffer.from(
      JSON.stringify([1, '999999999', Date.now(), '00000000-0000-0000-0000-000000000000']),
    ).toString('base64url');
    for (const bad of [`${forged}.${mac}`, `${payload}.${mac.slice(0, -2)}AA`, 'junk']) {
      const response = await h.call(
        creator,
        'GET',
        `/me/posts/earnings?from=${from.toISOString()}&to=${to.toISOString()}&cursor=${encodeURIComponent(bad)}`,
      );
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/application\/json/);
      expect(await response.json()).toMatchObject({ error: 'invalid_request' });
    }
    // A cursor of another order is not this list's.
    const other = await h.call(
      creator,
      'GET',
      `/me/posts/earnings?from=${from.toISOString()}&to=${to.toISOString()}&order_by=newest&cursor=${encodeURIComponent(first.next_cursor)}`,
    );
    expect(other.status).toBe(400);
  });

  test('a tampered after is a GraphQL error; another creator’s posts are FORBIDDEN, finance reads them', async () => {
    const variables = {
      handle: 'pe_creator',
      from: from.toISOString(),
      to: to.toISOString(),
      order: 'EARNED',
    };
    const { data } = await h.gql(creator, PAGE_QUERY, { ...variables, first: 2 });
    const cursor: string = data.postEarnings.pageInfo.endCursor;
    const tampered = await h.gql(creator, PAGE_QUERY, { ...variables, after: `x${cursor}` });
    expect(tampered.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(tampered.errors?.[0]?.message).toMatch(/^after /);

    const forbidden = await h.gql(outsider, PAGE_QUERY, variables);
    expect(forbidden.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const asFinance = (await allPages(finance, 'EARNED')).flat();
    expect(asFinance.map((node) => node.postId).sort()).toEqual([...posts].sort());
  });

  test('a range over 400 days is a 400 naming the limit; the viewer’s own empty range lists its posts with zeros', async () => {
    const long = await h.call(
      creator,
      'GET',
      `/me/posts/earnings?from=2025-01-01T00:00:00Z&to=2026-03-01T00:00:00Z`,
    );
    expect(long.status).toBe(400);
    expect(((await long.json()) as { message: string }).message).toMatch(/400 days/);
    const { errors } = await h.gql(creator, PAGE_QUERY, {
      handle: 'pe_creator',
      from: '2025-01-01T00:00:00Z',
      to: '2026-03-01T00:00:00Z',
      order: 'EARNED',
    });
    expect(errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const later = await h.gql(creator, PAGE_QUERY, {
      handle: 'pe_creator',
      from: to.toISOString(),
      to: new Date(to.getTime() + 86_400_000).toISOString(),
      order: 'EARNED',
      first: 50,
    });
    const nodes = (later.data.postEarnings as Connection).edges.map((edge) => edge.node);
    expect(nodes.map((node) => node.postId)).toEqual([...posts].reverse());
    for (const node of nodes) expect(engagementOf(node) + Number(node.earnedUsdMicro)).toBe(0);
  });
});

describe('postStats', () => {
  const STATS = `query ($id: ID!, $from: DateTime, $to: DateTime, $granularity: EarningsGranularity, $timezone: String) {
    postStats(id: $id, from: $from, to: $to, granularity: $granularity, timezone: $timezone) {
      likes replies quotes reposts earnedUsdMicro
      series { bucket likes replies quotes reposts earnedUsdMicro }
    }
  }`;

  test('without arguments: lifetime counts and earnings, no series', async () => {
    const { data, errors } = await h.gql(creator, STATS, { id: posts[0] });
    expect(errors).toBeUndefined();
    expect(data.postStats).toEqual({
      likes: 0,
      replies: 3,
      quotes: 0,
      reposts: 1,
      earnedUsdMicro: '1500000',
      series: null,
    });
  });

  test('each granularity’s series sums to the lifetime answer for a range covering everything', async () => {
    for (const id of [posts[0]!, posts[1]!, posts[4]!]) {
      const lifetime = (await h.gql(creator, STATS, { id })).data.postStats;
      for (const [granularity, timezone] of [
        ['HOUR', 'UTC'],
        ['DAY', 'America/Los_Angeles'],
        ['WEEK', 'Asia/Kolkata'],
        ['MONTH', 'Pacific/Kiritimati'],
      ] as const) {
        const { data, errors } = await h.gql(creator, STATS, {
          id,
          from: new Date(from.getTime() - 86_400_000).toISOString(),
          to: to.toISOString(),
          granularity,
          timezone,
        });
        expect(errors).toBeUndefined();
        const { series, ...totals } = data.postStats;
        const { series: _none, ...lifetimeTotals } = lifetime;
        expect(totals).toEqual(lifetimeTotals);
        expect(series.length).toBeGreaterThan(0);
        const sum = { likes: 0, replies: 0, quotes: 0, reposts: 0, earned: 0n };
        for (const bucket of series) {
          expect(Date.parse(bucket.bucket)).toBeLessThanOrEqual(Date.now());
          sum.likes += bucket.likes;
          sum.replies += bucket.replies;
          sum.quotes += bucket.quotes;
          sum.reposts += bucket.reposts;
          sum.earned += BigInt(bucket.earnedUsdMicro);
        }
        expect(sum).toEqual({
          likes: lifetime.likes,
          replies: lifetime.replies,
          quotes: lifetime.quotes,
          reposts: lifetime.reposts,
          earned: BigInt(lifetime.earnedUsdMicro),
        });
      }
    }
  });

  test('buckets start at local midnight of the zone, as UTC instants', async () => {
    const { data } = await h.gql(creator, STATS, {
      id: posts[0],
      from: from.toISOString(),
      to: to.toISOString(),
      granularity: 'DAY',
      timezone: 'America/Los_Angeles',
    });
    for (const bucket of data.postStats.series) {
      const local = new Intl.DateTimeFormat('en-US', {
        timeZone: 'America/Los_Angeles',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      }).format(new Date(bucket.bucket));
      expect(local).toBe('00:00');
    }
  });

  test('another creator’s post is FORBIDDEN; HOUR over more than 31 days and a granularity without a range are refused', async () => {
    const forbidden = await h.gql(outsider, STATS, { id: posts[0] });
    expect(forbidden.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const tooLong = await h.gql(creator, STATS, {
      id: posts[0],
      from: '2026-01-01T00:00:00Z',
      to: '2026-03-01T00:00:00Z',
      granularity: 'HOUR',
    });
    expect(tooLong.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(tooLong.errors?.[0]?.message).toMatch(/31 days/);
    const noRange = await h.gql(creator, STATS, { id: posts[0], granularity: 'DAY' });
    expect(noRange.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const badZone = await h.gql(creator, STATS, {
      id: posts[0],
      from: from.toISOString(),
      to: to.toISOString(),
      granularity: 'DAY',
      timezone: 'Mars/Olympus',
    });
    expect(badZone.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
