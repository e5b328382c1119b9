import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiKeyStore } from '../src/adapters/postgres/api-keys.repository.js';
import { createLiveEvents, type LiveEvents } from '../src/adapters/redis/live-events.js';
import { buildServer } from '../src/api/server.js';
import { cachedApiKeyStore } from '../src/app/identity-stores.js';
import { createChangeSignals, type ChangeSignals } from '../src/app/change-signals.js';
import { createPaidPost } from '../src/app/write-path/create-post.js';
import { createApiKey, revokeApiKey } from '../src/domain/auth/api-keys.service.js';
import { cliChangeSignals } from '../src/cli/cli-changes.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * The read caches (issue #7's benchmark): feed pages, API key lookups and GraphQL read answers are
 * kept in process until a change signal. The TTL is an hour here, so every test below that sees
 * fresh data proves a signal arrived, not that an entry expired.
 */
type Json = Record<string, any>;

let h: ServiceHarness;
let alice: Member;
let bob: Member;

beforeAll(async () => {
  h = await openServiceHarness({ READ_CACHE_TTL_MS: '3600000' });
  alice = await h.member('cache_alice', 10_000_000n);
  bob = await h.member('cache_bob', 0n);
});
afterAll(() => h?.close());

const latestIds = async (base: string, who: Member): Promise<string[]> => {
  const response = await fetch(`${base}/api/v1/feed?sort=latest&limit=50`, {
    headers: { authorization: `Bearer ${who.key}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { posts: Json[] }).posts.map((post) => post.id as string);
};

const FEED_QUERY = '{ feed(sort: LATEST, first: 50) { edges { node { id likeCount viewerHasLiked } } } }';
const graphqlFeed = async (who: Member) => {
  const result = await h.gql(who, FEED_QUERY);
  expect(result.errors).toBeUndefined();
  return (result.data.feed.edges as Json[]).map((edge) => edge.node as Json);
};

/** Until `check` passes or `ms` is up: a signal from another process arrives asynchronously. */
async function eventually(check: () => Promise<void>, ms = 3_000): Promise<void> {
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

describe('in one process', () => {
  test('a feed page is served from the cache until a write signals a change', async () => {
    const before = await latestIds(h.base, bob);
    // Written beneath the API (no signal): the cached page does not know it yet.
    const hidden = await createPaidPost(h.env.app, alice.account.id, {
      type: 'post',
      content: 'unsignalled',
    });
    expect(await latestIds(h.base, bob)).toEqual(before);
    // Any write through the API empties the caches before it answers.
    const like = await h.call(bob, 'POST', `/posts/${before[0] ?? hidden.id}/like`);
    expect(like.status).toBe(200);
    expect(await latestIds(h.base, bob)).toContain(hidden.id);
  });

  test('a client reads its own writes at once, through REST and through GraphQL', async () => {
    await latestIds(h.base, bob);
    const created = await h.call(alice, 'POST', '/posts', { type: 'post', content: 'read me now' });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    expect(await latestIds(h.base, bob)).toContain(id);

    const liked = (await graphqlFeed(bob)).find((node) => node.id === id);
    expect(liked).toMatchObject({ likeCount: 0, viewerHasLiked: false });
    const mutation = await h.gql(bob, 'mutation ($id: ID!) { like(postId: $id) { likeCount } }', { id });
    expect(mutation.errors).toBeUndefined();
    expect((await graphqlFeed(bob)).find((node) => node.id === id)).toMatchObject({
      likeCount: 1,
      viewerHasLiked: true,
    });
  });

  test('a cached GraphQL answer is given to the same key only', async () => {
    const post = (await graphqlFeed(bob))[0]!;
    await h.call(bob, 'POST', `/posts/${post.id as string}/like`);
    expect((await graphqlFeed(bob)).find((node) => node.id === post.id)?.viewerHasLiked).toBe(true);
    // Alice asks the very same document: her answer is hers, not Bob's cached one.
    expect((await graphqlFeed(alice)).find((node) => node.id === post.id)?.viewerHasLiked).toBe(false);
  });

  test('a revoked key is refused although answers to it are cached', async () => {
    const { key } = await createApiKey(h.env.app.apiKeys, bob.account.id, ['read']);
    const second: Member = { account: bob.account, key };
    await graphqlFeed(second);
    await latestIds(h.base, second);
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
});

test('a renamed account’s next request carries its new handle, not the cached key’s', async () => {
  const dora = await h.member('cache_dora', 2_000_000n);
  const first = await h.call(dora, 'POST', '/posts', { type: 'post', content: 'before the rename' });
  expect(((await first.json()) as Json).author.handle).toBe('cache_dora');
  const renamed = await h.call(dora, 'PATCH', '/me/profile', { handle: 'cache_dora_2' });
  expect(renamed.status).toBe(200);
  const second = await h.call(dora, 'POST', '/posts', { type: 'post', content: 'after the rename' });
  expect(((await second.json()) as Json).author.handle).toBe('cache_dora_2');
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
      apiKeys: cachedApiKeyStore(createApiKeyStore(app.db), secondChanges),
    });
    secondBase = await second.listen({ port: 0, host: '127.0.0.1' });
    // The subscription to the change channel is live once a round trip through it has arrived.
    await eventually(async () => {
      let heard = false;
      const stop = secondChanges.onChange('content', () => (heard = true));
      h.env.app.changes.changed('content');
      await new Promise((resolve) => setTimeout(resolve, 50));
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
    const before = await latestIds(secondBase, bob);
    const created = await h.call(alice, 'POST', '/posts', {
      type: 'post',
      content: 'from the other process',
    });
    const { id } = (await created.json()) as { id: string };
    expect(before).not.toContain(id);
    await eventually(async () => expect(await latestIds(secondBase, bob)).toContain(id));
  });

  test('a key revoked from the CLI is refused by a running process that cached it', async () => {
    const { key } = await createApiKey(h.env.app.apiKeys, alice.account.id, ['read']);
    const third: Member = { account: alice.account, key };
    await latestIds(secondBase, third);
    // As `npm run cli -- keys revoke` does it: the store beneath every cache, then a signal.
    await revokeApiKey(createApiKeyStore(h.env.app.db), key.slice(8, 16), null);
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
    const carol = await h.member('cache_carol', 0n, ['read']);
    // Windows are whole minutes: start the burst early in one so it cannot straddle two.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 50));
    for (let i = 0; i < 60; i++) {
      const allowed = await h.gql(carol, FEED_QUERY);
      expect(allowed.errors, `read ${i + 1}`).toBeUndefined();
    }
    const refused = await h.gql(carol, FEED_QUERY);
    expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED' });
  });
});
