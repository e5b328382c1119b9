import { Kysely, PostgresDialect } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPool } from '../src/adapters/postgres/db.js';
import type { Database } from '../src/adapters/postgres/database.js';
import { buildServer } from '../src/api/server.js';
import { buildTrendingSnapshot } from '../src/app/feed/trending.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * The GraphQL read API (issue #7) over the REST read services: feed, post, trending and
 * user.posts, their paging and errors, the per-request loaders (viewerHasLiked, trendingScore,
 * parent/quotedPost) and the number of SQL statements a page costs.
 */
let h: ServiceHarness;
let alice: Member;
let bob: Member;
let original: string;
let reply: string;
let quote: string;

type Json = Record<string, any>;

/** The nodes of a connection, in order. */
function nodesOf(connection: Json): Json[] {
  return (connection.edges as Json[]).map((edge) => edge.node as Json);
}

async function quickPost(who: Member, content: string): Promise<string> {
  return (await commitPost(h.env.app, who.account.id, { type: 'post', content })).id;
}

async function restPost(who: Member, body: Record<string, string>): Promise<string> {
  const response = await h.call(who, 'POST', '/posts', body);
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  alice = await h.member('gr_alice', 100_000_000n);
  bob = await h.member('gr_bob', 10_000_000n);
  for (let i = 0; i < 55; i++) await quickPost(alice, `filler ${i}`);
  original = await restPost(alice, { type: 'post', content: 'the original' });
  reply = await restPost(bob, { type: 'reply', content: 'a reply', parent_id: original });
  quote = await restPost(bob, { type: 'quote', content: 'a quote', quoted_post_id: original });
  await rankNow();
});

/** A fresh trending snapshot of every post so far (retried while the worker holds the build lock). */
async function rankNow(): Promise<void> {
  while ((await buildTrendingSnapshot(h.env.app)) === undefined) await new Promise((r) => setTimeout(r, 50));
}
afterAll(async () => {
  await h?.close();
});

const FEED = `query ($first: Int, $after: String, $sort: FeedSort!) {
  feed(sort: $sort, first: $first, after: $after) {
    edges { cursor node { id type content likeCount replyCount repostCount quoteCount createdAt author { handle } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

describe('feed', () => {
  test('LATEST pages newest first; `after: endCursor` continues without gaps or repeats', async () => {
    const first = await h.gql(bob, FEED, { sort: 'LATEST', first: 2 });
    expect(first.errors).toBeUndefined();
    const page = first.data.feed;
    expect(nodesOf(page).map((node) => node.id as string)).toEqual([quote, reply]);
    expect(page.edges[1].node).toMatchObject({
      type: 'REPLY',
      content: 'a reply',
      author: { handle: 'gr_bob' },
      likeCount: 0,
    });
    expect(typeof page.edges[0].node.createdAt).toBe('string');
    expect(page.pageInfo.hasNextPage).toBe(true);
    expect(page.edges[1].cursor).toBe(page.pageInfo.endCursor);

    const second = await h.gql(bob, FEED, { sort: 'LATEST', first: 2, after: page.pageInfo.endCursor });
    expect(second.errors).toBeUndefined();
    expect(second.data.feed.edges[0].node).toMatchObject({ id: original, replyCount: 1, quoteCount: 1 });
    // A middle edge's own cursor continues right after it.
    const fromMiddle = await h.gql(bob, FEED, { sort: 'LATEST', first: 1, after: page.edges[0].cursor });
    expect(fromMiddle.data.feed.edges[0].node.id).toBe(reply);
  });

  test('the reads need the `read` scope', async () => {
    const writer = await h.member('gr_writer', 0n, ['engage']);
    for (const query of ['query { feed { edges { cursor } } }', 'query { trending { score } }']) {
      const refused = await h.gql(writer, query);
      expect(refused.errors?.[0]).toMatchObject({
        message: "API key lacks the 'read' scope",
        extensions: { code: 'FORBIDDEN' },
      });
    }
    const post = await h.gql(writer, 'query ($id: ID!) { post(id: $id) { id } }', { id: original });
    expect(post.errors?.[0]?.extensions.code).toBe('FORBIDDEN');
  });

  test('TRENDING (the default) answers the same shape', async () => {
    const trending = await h.gql(
      bob,
      'query { feed(first: 3) { edges { node { id author { handle } } } pageInfo { hasNextPage endCursor } } }',
    );
    expect(trending.errors).toBeUndefined();
    expect(trending.data.feed.edges).toHaveLength(3);
    expect(trending.data.feed.pageInfo.hasNextPage).toBe(true);
  });

  test('a bad `first` or `after` is BAD_USER_INPUT; an expired trending cursor is CURSOR_EXPIRED', async () => {
    for (const first of [0, 51]) {
      const refused = await h.gql(bob, FEED, { sort: 'LATEST', first });
      expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'first' });
    }
    for (const after of ['garbage', '']) {
      const refused = await h.gql(bob, FEED, { sort: 'LATEST', after });
      expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'after' });
    }
    const first = await h.gql(bob, FEED, { sort: 'TRENDING', first: 2 });
    const cursor: string = first.data.feed.pageInfo.endCursor;
    const [version] = JSON.parse(Buffer.from(cursor.split('.')[0]!, 'base64url').toString()) as [number];
    await h.env.app.redis.del(`${h.env.app.redisPrefix}:trending:v${version}`);
    const expired = await h.gql(bob, FEED, { sort: 'TRENDING', first: 2, after: cursor });
    expect(expired.errors?.[0]?.extensions.code).toBe('CURSOR_EXPIRED');
  });
});

describe('post', () => {
  const POST = `query ($id: ID!) { post(id: $id) {
    id type viewerHasLiked trendingScore
    author { handle walletAddress }
    parent { id content parent { id } }
    quotedPost { id author { handle } }
  } }`;

  test('parent and quotedPost; null for an unknown or malformed id', async () => {
    const asReply = await h.gql(alice, POST, { id: reply });
    expect(asReply.errors).toBeUndefined();
    expect(asReply.data.post).toMatchObject({
      id: reply,
      type: 'REPLY',
      author: { handle: 'gr_bob', walletAddress: bob.account.walletAddress },
      parent: { id: original, content: 'the original', parent: null },
      quotedPost: null,
    });
    const asQuote = await h.gql(alice, POST, { id: quote });
    expect(asQuote.data.post).toMatchObject({
      type: 'QUOTE',
      parent: null,
      quotedPost: { id: original, author: { handle: 'gr_alice' } },
    });
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const none = await h.gql(alice, POST, { id });
      expect(none.errors).toBeUndefined();
      expect(none.data.post).toBeNull();
    }
  });

  test('viewerHasLiked is true for the liker only', async () => {
    expect((await h.call(bob, 'POST', `/posts/${original}/like`)).status).toBe(200);
    const query = 'query ($id: ID!) { post(id: $id) { viewerHasLiked likeCount } }';
    expect((await h.gql(bob, query, { id: original })).data.post).toEqual({
      viewerHasLiked: true,
      likeCount: 1,
    });
    expect((await h.gql(alice, query, { id: original })).data.post).toEqual({
      viewerHasLiked: false,
      likeCount: 1,
    });
  });

  test('trendingScore is a number for a ranked post; trending lists posts with their scores', async () => {
    await rankNow();
    const top = await h.gql(bob, 'query { trending(first: 3) { score post { id trendingScore } } }');
    expect(top.errors).toBeUndefined();
    expect(top.data.trending).toHaveLength(3);
    const [best] = top.data.trending as Json[];
    expect(typeof best!.score).toBe('number');
    const scored = await h.gql(bob, 'query ($id: ID!) { post(id: $id) { trendingScore } }', {
      id: best!.post.id,
    });
    expect(typeof scored.data.post.trendingScore).toBe('number');
    const refused = await h.gql(bob, 'query { trending(first: 0) { score } }');
    expect(refused.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
  });
});

describe('replies', () => {
  test('a post’s replies page oldest first; a bad cursor is BAD_USER_INPUT', async () => {
    const second = await restPost(alice, { type: 'reply', content: 'second reply', parent_id: original });
    const query = `query ($id: ID!, $after: String) { post(id: $id) { replies(first: 1, after: $after) {
      edges { cursor node { id parent { id } } } pageInfo { hasNextPage endCursor }
    } } }`;
    const first = await h.gql(bob, query, { id: original });
    expect(first.errors).toBeUndefined();
    const page = first.data.post.replies;
    expect(nodesOf(page)).toEqual([{ id: reply, parent: { id: original } }]);
    expect(page.pageInfo.hasNextPage).toBe(true);
    const next = await h.gql(bob, query, { id: original, after: page.pageInfo.endCursor });
    expect(nodesOf(next.data.post.replies).map((node) => node.id as string)).toEqual([second]);
    expect(next.data.post.replies.pageInfo).toEqual({ hasNextPage: false, endCursor: null });
    // A cursor of another thread is refused, not read as a position in this one.
    const foreign = await h.gql(bob, query, { id: reply, after: page.pageInfo.endCursor });
    expect(foreign.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'after' });
  });
});

describe('user.posts', () => {
  test('the timeline merges posts and reposts; a repost names who reposted and when', async () => {
    expect((await h.call(bob, 'POST', `/posts/${original}/repost`)).status).toBe(201);
    const query = `query ($after: String) { user(handle: "gr_bob") { posts(first: 2, after: $after) {
      edges { cursor node { post { id author { handle } } repostedBy { handle } repostedAt } }
      pageInfo { hasNextPage endCursor }
    } } }`;
    const first = await h.gql(alice, query);
    expect(first.errors).toBeUndefined();
    const page = first.data.user.posts;
    expect(nodesOf(page).map((node) => node.post.id as string)).toEqual([original, quote]);
    expect(page.edges[0].node).toMatchObject({
      repostedBy: { handle: 'gr_bob' },
      post: { author: { handle: 'gr_alice' } },
    });
    expect(typeof page.edges[0].node.repostedAt).toBe('string');
    expect(page.edges[1].node.repostedBy).toBeNull();
    expect(page.pageInfo.hasNextPage).toBe(true);
    const second = await h.gql(alice, query, { after: page.pageInfo.endCursor });
    expect(nodesOf(second.data.user.posts).map((node) => node.post.id as string)).toEqual([reply]);
    expect(second.data.user.posts.pageInfo).toEqual({ hasNextPage: false, endCursor: null });
  });
});

describe('SQL per page', () => {
  const FULL_SELECTION =
    'id likeCount replyCount repostCount viewerHasLiked author { handle displayName } parent { id }';
  test('feed(LATEST) with authors, counts, viewerHasLiked and parent costs the same for 5 and 50 posts', async () => {
    let statements = 0;
    const counted = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: createPool(h.env.app.stack.postgres.url, { max: 2 }) }),
      log: (event) => {
        if (event.level === 'query') statements += 1;
      },
    });
    // A second server over the same app whose read services go through the counting db.
    let server: FastifyInstance | undefined;
    try {
      server = await buildServer({ ...h.env.app, db: counted, reads: { ...h.env.app.reads, db: counted } });
      const base = await server.listen({ port: 0, host: '127.0.0.1' });
      const countFor = async (first: number, selection = FULL_SELECTION) => {
        // Newest first: a reply among the newest posts, so both pages load a parent.
        const newest = await restPost(bob, {
          type: 'reply',
          content: `counted ${first}`,
          parent_id: original,
        });
        statements = 0;
        const response = await fetch(`${base}/graphql`, {
          method: 'POST',
          headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            query: `query ($first: Int) { feed(sort: LATEST, first: $first) { edges { node { ${selection} } } } }`,
            variables: { first },
          }),
        });
        const body = (await response.json()) as Json;
        expect(body.errors).toBeUndefined();
        const nodes = nodesOf(body.data.feed);
        expect(nodes).toHaveLength(first);
        expect(nodes[0]).toMatchObject({ id: newest });
        if (selection === FULL_SELECTION) expect(nodes[0]).toMatchObject({ parent: { id: original } });
        return statements;
      };
      const small = await countFor(5);
      const large = await countFor(50);
      // The page (authors and counts in it), the viewer's likes, the parents (one statement, as a
      // page). The authors the page read are not read again.
      expect(small).toBe(3);
      expect(large).toBe(small);
      // The feed query: the page alone. An author field the page did not read (bio) loads
      // the accounts, once for the page.
      const pageOnly =
        'id content type createdAt likeCount replyCount repostCount author { handle displayName }';
      expect(await countFor(20, pageOnly)).toBe(1);
      expect(await countFor(20, 'id author { handle bio }')).toBe(2);
    } finally {
      await server?.close();
      await counted.destroy();
    }
  });
});

describe('queries answered without Yoga’s HTTP layer (api/graphql/fast-path.ts)', () => {
  test('answer the status, content type and body Yoga answers, errors included', async () => {
    const cases: Array<{ query: string; variables?: Json; accept?: string }> = [
      {
        query:
          '{ feed(sort: LATEST, first: 3) { edges { cursor node { id likeCount author { handle } } } } }',
      },
      {
        query: 'query ($n: Int) { feed(sort: LATEST, first: $n) { pageInfo { endCursor } } }',
        variables: { n: 2 },
        accept: 'application/graphql-response+json',
      },
      // A resolver's error (first out of range), a variable that does not coerce, a null post.
      { query: '{ feed(sort: LATEST, first: 0) { edges { node { id } } } }' },
      {
        query: 'query ($n: Int) { feed(sort: LATEST, first: $n) { edges { node { id } } } }',
        variables: { n: 'two' },
        accept: 'application/graphql-response+json',
      },
      { query: `{ post(id: "${original}") { id quotedPost { id } } nothing: post(id: "x") { id } }` },
    ];
    const ask = async (c: (typeof cases)[number], origin?: string) => {
      const response = await fetch(`${h.base}/graphql`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${alice.key}`,
          'content-type': 'application/json',
          ...(c.accept ? { accept: c.accept } : {}),
          // A browser origin is left to Yoga (CORS): the same request through Yoga's HTTP layer.
          ...(origin ? { origin } : {}),
        },
        body: JSON.stringify({ query: c.query, variables: c.variables }),
      });
      return {
        status: response.status,
        type: response.headers.get('content-type'),
        body: await response.text(),
      };
    };
    for (const c of cases) {
      const fast = await ask(c);
      expect(fast, c.query).toEqual(await ask(c, 'http://localhost:5173'));
      expect(fast.body.length).toBeGreaterThan(10);
    }
  });
});
