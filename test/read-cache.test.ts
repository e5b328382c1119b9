import type { FastifyInstance } from 'fastify';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiKeyStore } from '../src/adapters/postgres/api-keys.repository.js';
import type { Database } from '../src/adapters/postgres/database.js';
import { createPool } from '../src/adapters/postgres/db.js';
import { createLiveEvents, type LiveEvents } from '../src/adapters/redis/live-events.js';
import { createRateLimiter } from '../src/adapters/redis/rate-limiter.js';
import { buildServer } from '../src/api/server.js';
import { cachedApiKeyStore } from '../src/app/identity-stores.js';
import {
  createChangeSignals,
  MAX_KEYS_PER_MESSAGE,
  postKey,
  type ChangeSignals,
} from '../src/app/change-signals.js';
import { READ_STALE_MS } from '../src/app/read-cache.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { authenticate, createApiKey, revokeApiKey } from '../src/domain/auth/api-keys.service.js';
import { cliChangeSignals } from '../src/cli/cli-changes.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { openTestEnv } from './support/test-env.js';

/**
 * The read caches (issue #7's benchmark, made to hold under writes by issue 21): feed pages, API
 * key lookups and GraphQL read answers are kept in process; a change marks stale only the entries
 * that read what it names; a stale entry is refreshed by one computation while other readers get
 * it for at most READ_STALE_MS; a writer always reads its own writes. The TTL is an hour here, so
 * every test below that sees fresh data proves a signal (or a write of the reader's own) arrived,
 * not that an entry expired. "Beneath" means a change made in SQL, which no cache hears of: it
 * shows whether an entry was computed again.
 */
type Json = Record<string, any>;

let h: ServiceHarness;
let alice: Member;
let bob: Member;
/** Only reads: never a writer, so it is given cached entries, stale ones included. */
let carol: Member;

beforeAll(async () => {
  // Rate limits off: readers here poll far more than 60 times a minute ("rate limits" below has its own).
  h = await openServiceHarness({ READ_CACHE_TTL_MS: '3600000', RATE_LIMIT_MULTIPLIER: '0' });
  alice = await h.member('cache_alice', 20_000_000n);
  bob = await h.member('cache_bob', 0n);
  carol = await h.member('cache_carol', 0n, ['read']);
});
afterAll(() => h?.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function page(who: Member, query: string, base = h.base): Promise<Json> {
  const response = await fetch(`${base}/api/v1/feed?${query}`, {
    headers: { authorization: `Bearer ${who.key}` },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}
const latestIds = async (who: Member, base = h.base): Promise<string[]> =>
  ((await page(who, 'sort=latest&limit=50', base)).posts as Json[]).map((post) => post.id as string);
const itemOf = (body: Json, id: string): Json | undefined =>
  (body.posts as Json[]).find((post) => post.id === id);

async function post(who: Member, content: string): Promise<string> {
  const created = await h.call(who, 'POST', '/posts', { type: 'post', content });
  expect(created.status).toBe(201);
  return ((await created.json()) as { id: string }).id;
}

/** Changes a post's content in SQL: no signal, so only a computation that runs again shows it. */
async function editBeneath(id: string, content: string): Promise<void> {
  await sql`UPDATE posts SET content = ${content} WHERE id = ${id}`.execute(h.env.app.db);
}

const FEED_QUERY =
  '{ feed(sort: LATEST, first: 50) { edges { node { id content likeCount viewerHasLiked } } } }';
const graphqlFeed = async (who: Member) => {
  const result = await h.gql(who, FEED_QUERY);
  expect(result.errors).toBeUndefined();
  return (result.data.feed.edges as Json[]).map((edge) => edge.node as Json);
};

/** Until `check` passes or `ms` is up: a refresh in the background, a signal from another process. */
async function eventually(check: () => Promise<void> | void, ms = 3_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

describe('invalidation in proportion to the change', () => {
  test('a like on post X refreshes the pages that show X, not a page without X', async () => {
    const older = await post(alice, 'older');
    await post(alice, 'middle');
    const newest = await post(alice, 'newest');
    const first = await page(carol, 'sort=latest&limit=2');
    expect((first.posts as Json[])[0]?.id).toBe(newest);
    const rest = `sort=latest&limit=1&cursor=${encodeURIComponent(first.next_cursor as string)}`;
    expect(itemOf(await page(carol, rest), older)?.content).toBe('older');

    await editBeneath(older, 'older, edited beneath');
    await editBeneath(newest, 'newest, edited beneath');
    expect((await h.call(bob, 'POST', `/posts/${newest}/like`)).status).toBe(200);

    // The page with X: stale, so refreshed (in the background: carol may get it once more).
    await eventually(async () =>
      expect(itemOf(await page(carol, 'sort=latest&limit=2'), newest)).toMatchObject({
        like_count: 1,
        content: 'newest, edited beneath',
      }),
    );
    // The page without X was not computed again, even past the staleness bound.
    await sleep(READ_STALE_MS + 100);
    expect(itemOf(await page(carol, rest), older)?.content).toBe('older');
  });

  test('a new post refreshes the first latest page only, not a page with a cursor', async () => {
    await post(alice, 'second page post');
    const onFirst = await post(alice, 'first page post');
    const first = await page(carol, 'sort=latest&limit=1');
    const rest = `sort=latest&limit=1&cursor=${encodeURIComponent(first.next_cursor as string)}`;
    const onRest = ((await page(carol, rest)).posts as Json[])[0]!.id as string;
    await editBeneath(onFirst, 'first, edited beneath');
    await editBeneath(onRest, 'rest, edited beneath');

    const created = await post(alice, 'the new one');
    await eventually(async () =>
      expect(((await page(carol, 'sort=latest&limit=1')).posts as Json[])[0]?.id).toBe(created),
    );
    await sleep(READ_STALE_MS + 100);
    expect(((await page(carol, rest)).posts as Json[])[0]).toMatchObject({
      id: onRest,
      content: 'second page post',
    });
  });
});

describe('read-your-writes', () => {
  test('a client reads its own post and like at once, through REST and through GraphQL', async () => {
    // Cached before the writes, for the writers and for a reader.
    await latestIds(carol);
    await latestIds(alice);
    await graphqlFeed(alice);
    const id = await post(alice, 'read me now');
    expect(await latestIds(alice)).toContain(id);
    expect((await graphqlFeed(alice)).map((node) => node.id as string)).toContain(id);

    expect((await graphqlFeed(bob)).find((node) => node.id === id)).toMatchObject({
      likeCount: 0,
      viewerHasLiked: false,
    });
    await page(bob, 'sort=latest&limit=50');
    const mutation = await h.gql(bob, 'mutation ($id: ID!) { like(postId: $id) { likeCount } }', { id });
    expect(mutation.errors).toBeUndefined();
    expect((await graphqlFeed(bob)).find((node) => node.id === id)).toMatchObject({
      likeCount: 1,
      viewerHasLiked: true,
    });
    expect(itemOf(await page(bob, 'sort=latest&limit=50'), id)?.like_count).toBe(1);
  });

  test('a writer never gets an entry computed before its write, even one its write did not touch', async () => {
    const id = await post(alice, 'untouched by the follow');
    await latestIds(carol); // cached, with this post
    await editBeneath(id, 'edited beneath, unsignalled');
    // A follow names two accounts, not this page: the page stays fresh for carol.
    expect((await h.call(bob, 'POST', '/users/cache_alice/follow')).status).toBeLessThan(300);
    expect(itemOf(await page(bob, 'sort=latest&limit=50'), id)?.content).toBe('edited beneath, unsignalled');
    expect(itemOf(await page(carol, 'sort=latest&limit=50'), id)?.content).toBe(
      'edited beneath, unsignalled',
    );
  });
});

describe('no herd while changes keep arriving', () => {
  test('50 concurrent readers under a change every 3 ms share few computations (REST and GraphQL)', async () => {
    let statements = 0;
    const counted = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: createPool(h.env.app.stack.postgres.url, { max: 4 }) }),
      log: (event) => {
        if (event.level === 'query') statements += 1;
      },
    });
    // A second server whose read services go through the counting db; it hears the same signals.
    let server: FastifyInstance | undefined;
    try {
      server = await buildServer({ ...h.env.app, db: counted, reads: { ...h.env.app.reads, db: counted } });
      const base = await server.listen({ port: 0, host: '127.0.0.1' });
      const hot = (await latestIds(carol))[0]!;
      const run = async (read: () => Promise<void>) => {
        statements = 0;
        let reads = 0;
        const until = Date.now() + 2_000;
        const writer = (async () => {
          while (Date.now() < until) {
            h.env.app.changes.changed('latest', postKey(hot));
            await sleep(3);
          }
        })();
        const reader = async () => {
          while (Date.now() < until) {
            await read();
            reads += 1;
          }
        };
        await Promise.all([writer, ...Array.from({ length: 50 }, reader)]);
        return { reads, statements };
      };
      const rest = await run(async () => {
        await page(carol, 'sort=latest&limit=20', base);
      });
      const graphql = await run(async () => {
        const response = await fetch(`${base}/graphql`, {
          method: 'POST',
          headers: { authorization: `Bearer ${carol.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            query: '{ feed(sort: LATEST, first: 20) { edges { node { id likeCount } } } }',
          }),
        });
        expect(response.status).toBe(200);
      });
      for (const { reads, statements: used } of [rest, graphql]) {
        expect(reads).toBeGreaterThan(100);
        // One computation at a time per page, each a few statements, never one per reader.
        expect(used * 5).toBeLessThan(reads);
      }
    } finally {
      await server?.close();
      await counted.destroy();
    }
  });
});

describe('reads on a pool of their own', () => {
  test('feed pages, GraphQL reads and key lookups answer while every write connection is held', async () => {
    const erin = await h.member('cache_erin_reader', 0n, ['read']); // a key no cache has seen
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Every connection of the write path's pool (20), each inside a transaction that waits.
    const held = Array.from({ length: 20 }, () =>
      h.env.app.db.transaction().execute(async (trx) => {
        await sql`SELECT 1`.execute(trx);
        await gate;
      }),
    );
    try {
      await sleep(200);
      const within = <T>(promise: Promise<T>) =>
        Promise.race([
          promise,
          sleep(5_000).then(() => Promise.reject(new Error('waited for the write pool'))),
        ]);
      const rest = await within(page(erin, 'sort=latest&limit=7'));
      expect(rest.posts).toHaveLength(7);
      const graphql = await within(
        h.gql(erin, '{ feed(sort: LATEST, first: 7) { edges { node { id author { handle } } } } }'),
      );
      expect(graphql.errors).toBeUndefined();
    } finally {
      release();
      await Promise.all(held);
    }
  });
});

describe('in one process', () => {
  test('a cached GraphQL answer is given to the same key only', async () => {
    const node = (await graphqlFeed(bob))[0]!;
    await h.call(bob, 'POST', `/posts/${node.id as string}/like`);
    expect((await graphqlFeed(bob)).find((n) => n.id === node.id)?.viewerHasLiked).toBe(true);
    // Alice asks the very same document: her answer is hers, not Bob's cached one.
    expect((await graphqlFeed(alice)).find((n) => n.id === node.id)?.viewerHasLiked).toBe(false);
  });

  test('a revoked key is refused although answers to it are cached', async () => {
    const { key } = await createApiKey(h.env.app.apiKeys, bob.account.id, ['read']);
    const second: Member = { account: bob.account, key };
    await graphqlFeed(second);
    await latestIds(second);
    const id = key.slice(8, 16);
    const revoked = await h.gql(bob, 'mutation ($id: ID!) { revokeApiKey(id: $id) }', { id });
    expect(revoked.data).toEqual({ revokeApiKey: true });

    const rest = await fetch(`${h.base}/api/v1/feed?sort=latest&limit=50`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(rest.status).toBe(401);
    const graphql = await fetch(`${h.base}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: FEED_QUERY }),
    });
    expect(graphql.status).toBe(401);
  });

  test('a renamed account’s posts show its new handle in other readers’ cached pages and answers', async () => {
    const dora = await h.member('cache_dora', 2_000_000n);
    const first = await h.call(dora, 'POST', '/posts', { type: 'post', content: 'before the rename' });
    const { id, author } = (await first.json()) as Json;
    expect(author.handle).toBe('cache_dora');
    const authorQuery = `{ post(id: "${id as string}") { author { handle } } }`;
    const asked = await h.gql(carol, authorQuery);
    expect(asked.errors).toBeUndefined();
    expect(asked.data.post.author.handle).toBe('cache_dora');
    // Carol did not write: she may get the page from before dora's post for a moment.
    await eventually(async () =>
      expect(itemOf(await page(carol, 'sort=latest&limit=50'), id)?.author.handle).toBe('cache_dora'),
    );

    const renamed = await h.call(dora, 'PATCH', '/me/profile', { handle: 'cache_dora_2' });
    expect(renamed.status).toBe(200);
    // The key's cached row carries the handle too: the next post is written under the new one.
    const second = await h.call(dora, 'POST', '/posts', { type: 'post', content: 'after the rename' });
    expect(((await second.json()) as Json).author.handle).toBe('cache_dora_2');
    await eventually(async () => {
      expect((await h.gql(carol, authorQuery)).data.post.author.handle).toBe('cache_dora_2');
      expect(itemOf(await page(carol, 'sort=latest&limit=50'), id)?.author.handle).toBe('cache_dora_2');
    });
    // A cached "no such user" goes once someone takes the handle.
    expect((await h.gql(carol, '{ user(handle: "cache_erin") { handle } }')).data.user).toBeNull();
    await createAccount(h.env.app, { handle: 'cache_erin' });
    await eventually(async () =>
      expect((await h.gql(carol, '{ user(handle: "cache_erin") { handle } }')).data.user).toEqual({
        handle: 'cache_erin',
      }),
    );
  });
});

describe('READ_CACHE_TTL_MS=0', () => {
  test('turns the API key cache off too: a key revoked beneath every cache is refused at once', async () => {
    const revokeBeneath = (db: typeof h.env.app.db, keyId: string) =>
      sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${keyId}`.execute(db);

    // With caching on, the key row is kept: a revocation nobody signals is not seen.
    const { key: cachedKey } = await createApiKey(h.env.app.apiKeys, carol.account.id, ['read']);
    const cached = await authenticate(h.env.app.apiKeys, `Bearer ${cachedKey}`);
    await revokeBeneath(h.env.app.db, cached.keyId);
    await expect(authenticate(h.env.app.apiKeys, `Bearer ${cachedKey}`)).resolves.toBeTruthy();

    const off = await openTestEnv({ READ_CACHE_TTL_MS: '0' });
    try {
      const account = await createAccount(off.app, { handle: 'uncached' });
      const { key } = await createApiKey(off.app.apiKeys, account.id, ['read']);
      const viewer = await authenticate(off.app.apiKeys, `Bearer ${key}`);
      await revokeBeneath(off.app.db, viewer.keyId);
      await expect(authenticate(off.app.apiKeys, `Bearer ${key}`)).rejects.toThrow('Invalid API key');
    } finally {
      await off.close();
    }
  });
});

describe('across processes', () => {
  // A second API "process": its own Redis subscriber, change signals and key cache, so the only
  // way it can learn of the first one's writes is the Redis channel.
  let secondEvents: LiveEvents;
  let secondChanges: ChangeSignals;
  let second: FastifyInstance;
  let secondBase: string;

  beforeAll(async () => {
    const { app } = h.env;
    secondEvents = createLiveEvents({
      url: app.stack.redis.url,
      prefix: app.config.REDIS_PREFIX,
      publisher: app.redis,
    });
    secondChanges = createChangeSignals(secondEvents, app.logger);
    second = await buildServer({
      ...app,
      liveEvents: secondEvents,
      changes: secondChanges,
      apiKeys: cachedApiKeyStore(
        createApiKeyStore(app.db, app.apiKeyUses),
        secondChanges,
        app.config.READ_CACHE_TTL_MS,
      ),
    });
    secondBase = await second.listen({ port: 0, host: '127.0.0.1' });
    // The subscription to the change channel is live once a round trip through it has arrived.
    await eventually(async () => {
      let heard = false;
      const stop = secondChanges.onChange(() => (heard = true));
      h.env.app.changes.changed('trending');
      await sleep(50);
      stop();
      expect(heard).toBe(true);
    });
  });
  afterAll(async () => {
    await second?.close();
    await secondChanges?.close();
    await secondEvents?.close();
  });

  test('a post written through one process shows in the other’s cached feed', async () => {
    const before = await latestIds(bob, secondBase);
    const id = await post(alice, 'from the other process');
    expect(before).not.toContain(id);
    await eventually(async () => expect(await latestIds(bob, secondBase)).toContain(id));
  });

  test('changes go out batched by key; a burst naming too many goes out as everything', async () => {
    const heard: string[][] = [];
    const stop = secondChanges.onChange((keys) => heard.push([...keys]));
    try {
      h.env.app.changes.changed(postKey('a'), 'latest');
      h.env.app.changes.changed(postKey('b'));
      await eventually(() =>
        expect(heard.flat()).toEqual(expect.arrayContaining(['post:a', 'post:b', 'latest'])),
      );
      expect(heard).toHaveLength(1); // one message for changes within 10 ms
      heard.length = 0;
      const burst = Array.from({ length: MAX_KEYS_PER_MESSAGE + 1 }, (_, i) => postKey(`burst${i}`));
      h.env.app.changes.changed(...burst);
      await eventually(() => expect(heard).toEqual([['*']]));
    } finally {
      stop();
    }
  });

  test('a key revoked from the CLI is refused by a running process that cached it', async () => {
    const { key } = await createApiKey(h.env.app.apiKeys, alice.account.id, ['read']);
    const third: Member = { account: alice.account, key };
    await latestIds(third, secondBase);
    // As `npm run cli -- keys revoke` does it: the store beneath every cache, then a signal.
    await revokeApiKey(createApiKeyStore(h.env.app.db, h.env.app.apiKeyUses), key.slice(8, 16), null);
    const cli = cliChangeSignals(h.env.app.stack.redis.url, h.env.app.config.REDIS_PREFIX);
    cli.changed('identity');
    await cli.close();
    await eventually(async () => {
      const response = await fetch(`${secondBase}/api/v1/feed?sort=latest&limit=50`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(response.status).toBe(401);
    });
  });
});

describe('rate limits', () => {
  test('a cached GraphQL answer still spends the read bucket: the 61st read in a minute is refused', async () => {
    const { app } = h.env;
    // A server of its own with the spec's limits (the harness runs without).
    const limited = await buildServer({
      ...app,
      rateLimiter: createRateLimiter(app.redis, { prefix: app.config.REDIS_PREFIX, multiplier: 1 }),
    });
    try {
      const base = await limited.listen({ port: 0, host: '127.0.0.1' });
      const dave = await h.member('cache_dave', 0n, ['read']);
      const ask = async () => {
        const response = await fetch(`${base}/graphql`, {
          method: 'POST',
          headers: { authorization: `Bearer ${dave.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ query: FEED_QUERY }),
        });
        return (await response.json()) as { errors?: Json[] };
      };
      // Windows are whole minutes: start the burst early in one so it cannot straddle two.
      const intoMinute = Date.now() % 60_000;
      if (intoMinute > 50_000) await sleep(60_000 - intoMinute + 50);
      for (let i = 0; i < 60; i++) expect((await ask()).errors, `read ${i + 1}`).toBeUndefined();
      expect((await ask()).errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED' });
    } finally {
      await limited.close();
    }
  });
});
