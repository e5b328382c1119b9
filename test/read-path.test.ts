import { Kysely, PostgresDialect, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPool } from '../src/adapters/postgres/db.js';
import type { Database } from '../src/adapters/postgres/database.js';
import { getPost, latestFeedPage } from '../src/app/feed/post-reads.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { drainOnChain } from './support/chain-tampering.js';
import { expectShape } from './support/expect-shape.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * The read path (issue #7) against the spec: GET /feed (latest), GET /posts/{id} and
 * GET /users/{handle}/posts, their exact shapes, keyset pagination, errors, posts whose payment
 * failed on chain, and the number of SQL statements a page costs. Trending ordering is tested in
 * test/trending.test.ts.
 */
let h: ServiceHarness;
let alice: Member;
let bob: Member;

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  alice = await h.member('read_alice', 100_000_000n);
  bob = await h.member('read_bob', 10_000_000n);
});
afterAll(async () => {
  await h?.close();
});

const FEED_ITEM = {
  id: 'string',
  content: 'string',
  type: 'string',
  author: 'object',
  like_count: 'integer',
  reply_count: 'integer',
  repost_count: 'integer',
  created_at: 'iso8601',
} as const;
const FEED_AUTHOR = { handle: 'string', display_name: 'string', avatar_url: 'string' } as const;
const SINGLE_AUTHOR = { ...FEED_AUTHOR, wallet_address: 'string' } as const;
/** Nested parent / quoted_post: the single-post shape without thread context of its own. */
const CONTEXT_POST = FEED_ITEM;
const SINGLE_POST = { ...FEED_ITEM, parent: ['object', 'null'], quoted_post: ['object', 'null'] } as const;

type Json = Record<string, any>;

async function get(who: Member, path: string): Promise<{ status: number; body: Json }> {
  const response = await h.call(who, 'GET', path);
  return { status: response.status, body: (await response.json()) as Json };
}

async function restPost(who: Member, body: Record<string, string>): Promise<string> {
  const response = await h.call(who, 'POST', '/posts', body);
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

/** A paid post straight through the service (left unsettled: pending posts are shown). */
async function quickPost(who: Member, content: string): Promise<string> {
  return (await commitPost(h.env.app, who.account.id, { type: 'post', content })).id;
}

/** Visible post ids newest first, read independently of the read service. */
async function visiblePostIds(): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    SELECT p.id FROM posts p
    WHERE NOT EXISTS (SELECT 1 FROM chain_transactions c WHERE c.movement_id = p.movement_id AND c.status = 'failed')
    ORDER BY p.created_at DESC, p.id DESC`.execute(h.env.app.db);
  return rows.map((row) => row.id);
}

const ids = (page: Json) => (page.posts as Json[]).map((item) => item.id as string);

describe('shapes', () => {
  test('feed items, single posts (post, reply, quote) and timeline items have exactly the spec’s fields', async () => {
    const original = await restPost(alice, { type: 'post', content: 'the original' });
    const reply = await restPost(bob, { type: 'reply', content: 'a reply', parent_id: original });
    const quote = await restPost(bob, { type: 'quote', content: 'a quote', quoted_post_id: original });
    expect((await h.call(bob, 'POST', `/posts/${original}/repost`)).status).toBe(201);
    expect((await h.call(bob, 'POST', `/posts/${original}/like`)).status).toBe(200);

    const feed = await get(bob, '/feed?sort=latest&limit=50');
    expect(feed.status).toBe(200);
    expectShape(feed.body, { posts: 'array', has_more: 'boolean' });
    for (const item of feed.body.posts as Json[]) {
      expectShape(item, FEED_ITEM);
      expectShape(item.author, FEED_AUTHOR);
    }
    expect(ids(feed.body).slice(0, 3)).toEqual([quote, reply, original]);
    expect((feed.body.posts as Json[])[2]).toMatchObject({
      content: 'the original',
      type: 'post',
      author: { handle: 'read_alice', display_name: expect.any(String) },
      like_count: 1,
      reply_count: 1,
      repost_count: 1,
    });

    const single = await get(bob, `/posts/${original}`);
    expect(single.status).toBe(200);
    expectShape(single.body, SINGLE_POST);
    expectShape(single.body.author, SINGLE_AUTHOR);
    expect(single.body).toMatchObject({ id: original, parent: null, quoted_post: null, like_count: 1 });
    expect(single.body.author.wallet_address).toBe(alice.account.walletAddress);

    const asReply = await get(bob, `/posts/${reply}`);
    expectShape(asReply.body, SINGLE_POST);
    expectShape(asReply.body.parent, CONTEXT_POST);
    expectShape(asReply.body.parent.author, SINGLE_AUTHOR);
    expect(asReply.body).toMatchObject({ type: 'reply', quoted_post: null, parent: { id: original } });

    const asQuote = await get(bob, `/posts/${quote}`);
    expectShape(asQuote.body, SINGLE_POST);
    expectShape(asQuote.body.quoted_post, CONTEXT_POST);
    expect(asQuote.body).toMatchObject({ type: 'quote', parent: null, quoted_post: { id: original } });

    const timeline = await get(alice, '/users/read_bob/posts');
    expect(timeline.status).toBe(200);
    expectShape(timeline.body, { posts: 'array', has_more: 'boolean' });
    const [repostItem, quoteItem, replyItem] = timeline.body.posts as Json[];
    expectShape(repostItem, { ...FEED_ITEM, reposted_by: 'string', reposted_at: 'iso8601' });
    expect(repostItem).toMatchObject({
      id: original,
      reposted_by: 'read_bob',
      author: { handle: 'read_alice' },
    });
    expectShape(quoteItem, FEED_ITEM);
    expectShape(replyItem, FEED_ITEM);
    expect([quoteItem!.id, replyItem!.id]).toEqual([quote, reply]);
    expect(timeline.body.posts).toHaveLength(3);
  });

  test('the default sort (trending) answers the same item shape', async () => {
    const feed = await get(bob, '/feed?limit=5');
    expect(feed.status).toBe(200);
    for (const item of feed.body.posts as Json[]) expectShape(item, FEED_ITEM);
  });
});

describe('latest pagination', () => {
  test('three pages with posts created between fetches: no duplicates, no gaps', async () => {
    for (let i = 0; i < 7; i++) await quickPost(alice, `page me ${i}`);
    const before = await visiblePostIds();
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 3; page++) {
      const query = `/feed?sort=latest&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const { status, body } = await get(bob, query);
      expect(status).toBe(200);
      expectShape(body, { posts: 'array', has_more: 'boolean', next_cursor: 'string' });
      expect(body.has_more).toBe(true);
      seen.push(...ids(body));
      cursor = body.next_cursor as string;
      await quickPost(alice, `arrived after page ${page}`); // newer than every cursor: never shown later
    }
    expect(seen).toEqual(before.slice(0, 6));

    const rest = await get(bob, `/feed?sort=latest&limit=50&cursor=${encodeURIComponent(cursor!)}`);
    expect(rest.body.has_more).toBe(false);
    expect(rest.body).not.toHaveProperty('next_cursor');
    expect([...seen, ...ids(rest.body)]).toEqual(before);
  });

  test('timeline pages by its own cursor, which the feed refuses', async () => {
    for (let i = 0; i < 3; i++) await quickPost(bob, `bob ${i}`);
    const first = await get(alice, '/users/read_bob/posts?limit=2');
    expect(first.body.has_more).toBe(true);
    const cursor = encodeURIComponent(first.body.next_cursor as string);
    const second = await get(alice, `/users/read_bob/posts?limit=50&cursor=${cursor}`);
    const all = [...ids(first.body), ...ids(second.body)];
    expect(new Set(all).size).toBe(all.length);
    expect(all).toHaveLength(6); // 3 quick posts, the quote, the reply, the repost
    expect((await get(alice, `/feed?sort=latest&cursor=${cursor}`)).status).toBe(400);
    expect((await get(alice, `/users/read_alice/posts?cursor=${cursor}`)).status).toBe(400);
  });
});

describe('errors', () => {
  test('tampered cursors, bad limits and an unknown sort are 400 {error, message}', async () => {
    const first = await get(bob, '/feed?sort=latest&limit=1');
    const cursor = first.body.next_cursor as string;
    const [payload, mac] = cursor.split('.') as [string, string];
    const forged = `${Buffer.from(JSON.stringify(['2999-01-01T00:00:00.000000Z', alice.account.id])).toString('base64url')}.${mac}`;
    const flipped = `${payload.slice(0, -1)}${payload.endsWith('A') ? 'B' : 'A'}.${mac}`;
    for (const bad of [forged, flipped, 'garbage', `${cursor}x`]) {
      const { status, body } = await get(bob, `/feed?sort=latest&cursor=${encodeURIComponent(bad)}`);
      expect(status, bad).toBe(400);
      expectShape(body, { error: 'string', message: 'string' });
      expect(body.error).toBe('invalid_request');
      expect(body.message).toMatch(/cursor/);
    }
    for (const path of ['/feed?sort=latest&limit=', '/feed?limit=', '/users/read_bob/posts?limit=']) {
      for (const limit of ['0', '51', 'abc', '2.5']) {
        const { status, body } = await get(bob, `${path}${limit}`);
        expect(status, `${path}${limit}`).toBe(400);
        expect(body).toEqual({
          error: 'invalid_request',
          message: expect.stringMatching(/limit must be an integer from 1 to 50/),
        });
      }
    }
    const sort = await get(bob, '/feed?sort=oldest');
    expect(sort.status).toBe(400);
    expect(sort.body).toMatchObject({ error: 'invalid_request', message: expect.stringMatching(/sort/) });
  });

  test('unknown or malformed post ids and unknown handles are 404 {error, message}', async () => {
    for (const path of [
      '/posts/00000000-0000-4000-8000-000000000000',
      '/posts/not-a-uuid',
      '/users/read_nobody/posts',
    ]) {
      const { status, body } = await get(bob, path);
      expect(status, path).toBe(404);
      expectShape(body, { error: 'string', message: 'string' });
      expect(body.error).toBe('not_found');
    }
  });
});

describe('payments that failed on chain', () => {
  test('a failed post is shown nowhere, and a failed reply is not counted', async () => {
    const parent = await quickPost(alice, 'a parent');
    const carol = await h.member('read_carol', 2_000_000n);
    const failedPost = await commitPost(h.env.app, carol.account.id, { type: 'post', content: 'doomed' });
    const failedReply = await commitPost(h.env.app, carol.account.id, {
      type: 'reply',
      content: 'doomed reply',
      parentId: parent,
    });
    await drainOnChain(h.env.app, h.platform, carol.account, 2_000_000n);
    expect(await settlePayment(h.env.app, failedPost.chainTransactionId)).toBe('failed');
    expect(await settlePayment(h.env.app, failedReply.chainTransactionId)).toBe('failed');

    for (const id of [failedPost.id, failedReply.id]) {
      expect((await get(bob, `/posts/${id}`)).status).toBe(404);
    }
    const feed = await get(bob, '/feed?sort=latest&limit=50');
    expect(ids(feed.body)).not.toContain(failedPost.id);
    expect(ids(feed.body)).not.toContain(failedReply.id);
    expect((feed.body.posts as Json[]).find((item) => item.id === parent)).toMatchObject({ reply_count: 0 });
    expect((await get(bob, `/posts/${parent}`)).body).toMatchObject({ reply_count: 0 });
    expect((await get(bob, '/users/read_carol/posts')).body).toEqual({ posts: [], has_more: false });
  });
});

describe('SQL per page', () => {
  test('a page of latest posts with authors and counts is one statement, whatever its size', async () => {
    const existing = (await visiblePostIds()).length;
    for (let i = existing; i < 51; i++) await quickPost(alice, `filler ${i}`);

    let statements = 0;
    const counted = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: createPool(h.env.app.stack.postgres.url, { max: 2 }) }),
      log: (event) => {
        if (event.level === 'query') statements += 1;
      },
    });
    try {
      const deps = { db: counted, cursorSecret: h.env.app.cursorSecret };
      const countFor = async (limit: number) => {
        statements = 0;
        const page = await latestFeedPage(deps, { limit });
        expect(page.items).toHaveLength(limit);
        expect(page.items.every((item) => item.author.handle.length > 0)).toBe(true);
        return statements;
      };
      const small = await countFor(5);
      const large = await countFor(50);
      expect(small).toBe(1); // the page with authors and the counts stored on each post
      expect(large).toBe(small);

      const reply = await h.env.app.db
        .selectFrom('posts')
        .select('id')
        .where('type', '=', 'reply')
        .executeTakeFirstOrThrow();
      statements = 0;
      expect((await getPost(deps, reply.id)).parent).not.toBeNull();
      expect(statements).toBe(1); // the reply with its parent, authors and counts
    } finally {
      await counted.destroy();
    }
  });
});

describe('read-your-writes (read caches on, READ_CACHE_TTL_MS at its default)', () => {
  test('a client sees its own post and like at once, while a cached page of the feed is kept for others', async () => {
    const page = '/feed?sort=latest&limit=20';
    const graphqlIds = async (who: Member) => {
      const result = await h.gql(
        who,
        '{ feed(sort: LATEST, first: 20) { edges { node { id likeCount } } } }',
      );
      expect(result.errors).toBeUndefined();
      return (result.data.feed.edges as Json[]).map((edge) => edge.node as Json);
    };
    // Cached before the writes, for readers and for the writers.
    await get(bob, page);
    await get(alice, page);
    await graphqlIds(alice);
    const id = await restPost(alice, { type: 'post', content: 'mine, at once' });
    expect(ids((await get(alice, page)).body)).toContain(id);
    expect((await graphqlIds(alice)).map((node) => node.id as string)).toContain(id);

    expect((await h.call(bob, 'POST', `/posts/${id}/like`)).status).toBe(200);
    expect((await get(bob, page)).body.posts[0]).toMatchObject({ id, like_count: 1 });
    expect((await graphqlIds(bob))[0]).toMatchObject({ id, likeCount: 1 });
  });
});
