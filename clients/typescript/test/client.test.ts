import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRateLimiter } from '../../../src/adapters/redis/rate-limiter.js';
import { settledMoney } from '../../../test/support/balances.js';
import {
  openServiceHarness,
  type Member,
  type ServiceHarness,
} from '../../../test/support/service-harness.js';
import { until } from '../../../test/support/until.js';
import { createLedgerfeedClient, graphql, LedgerfeedError, type LedgerfeedClient } from '../src/index.js';
import { headerIn, startDropProxy } from './drop-proxy.js';

/**
 * The client against the real service (Postgres, Redis, ClickHouse, localnet, the payments
 * worker): what its own code adds to the generated types, a paid write's key and retries,
 * Retry-After, pagination and typed errors.
 */
let h: ServiceHarness;
const clientOf = (who: Member, baseUrl = h.base): LedgerfeedClient =>
  createLedgerfeedClient({ baseUrl, apiKey: who.key, retry: { backoffMs: 50 } });

/** Posts of `who` in the database, and their USDC available once payments settled. */
async function paidSoFar(who: Member) {
  const { rows } = await sql<{ n: string }>`
    SELECT count(*)::text AS n FROM posts WHERE author_id = ${who.account.id}::uuid`.execute(h.env.app.db);
  return {
    posts: Number(rows[0]!.n),
    availableMicro: (await settledMoney(h.env.app, who.account.id)).availableMicro,
  };
}

beforeAll(async () => {
  // Limits on (multiplier 100): the 429 test fills one bucket itself; the others post freely.
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '100' });
});
afterAll(async () => {
  await h?.close();
});

describe('paid writes', () => {
  test('a REST post whose answer is lost is retried with the same key and paid once', async () => {
    const who = await h.member('sdk_rest_drop', 5_000_000n);
    let drops = 1;
    const proxy = await startDropProxy(
      h.base,
      (text) => text.startsWith('POST /api/v1/posts ') && drops-- > 0,
    );
    try {
      const before = await paidSoFar(who);
      const post = await clientOf(who, proxy.url).createPost({
        type: 'post',
        content: 'lost answer, one charge',
      });
      expect(post.content).toBe('lost answer, one charge');

      // The first attempt reached the server and was cut while answering; the retry carried its key.
      expect(proxy.seen).toHaveLength(1);
      const firstKey = headerIn(proxy.seen[0]!, 'idempotency-key');
      expect(firstKey).toMatch(/^[0-9a-f-]{36}$/);
      // One key on the server: the retry's was the first attempt's.
      const { rows } = await sql<{ key: string }>`
        SELECT key FROM idempotency_keys WHERE account_id = ${who.account.id}::uuid`.execute(h.env.app.db);
      expect(rows.map((row) => row.key)).toEqual([firstKey]);

      const after = await paidSoFar(who);
      expect(after.posts - before.posts).toBe(1);
      expect(before.availableMicro - after.availableMicro).toBe(1_000_000n);
    } finally {
      await proxy.close();
    }
  });

  test('a GraphQL createPost whose answer is lost is retried with the same key and paid once', async () => {
    const who = await h.member('sdk_gql_drop', 5_000_000n);
    let drops = 1;
    const proxy = await startDropProxy(h.base, (text) => text.includes('createPost') && drops-- > 0);
    try {
      const before = await paidSoFar(who);
      const created = await clientOf(who, proxy.url).graphql(
        graphql(`
          mutation Post($content: String!) {
            createPost(input: { type: POST, content: $content }) {
              id
              content
              swapTx
            }
          }
        `),
        { content: 'graphql, lost answer' },
      );
      expect(created.createPost.content).toBe('graphql, lost answer');
      expect(proxy.seen).toHaveLength(1);
      expect(headerIn(proxy.seen[0]!, 'idempotency-key')).toMatch(/^[0-9a-f-]{36}$/);

      const after = await paidSoFar(who);
      expect(after.posts - before.posts).toBe(1);
      expect(before.availableMicro - after.availableMicro).toBe(1_000_000n);
    } finally {
      await proxy.close();
    }
  });

  test('a paid post whose connection goes silent is given up after the attempt timeout and retried, paid once', async () => {
    const who = await h.member('sdk_stall', 5_000_000n);
    let drops = 1;
    const proxy = await startDropProxy(
      h.base,
      (text) => text.startsWith('POST /api/v1/posts ') && drops-- > 0,
      'stall',
    );
    try {
      const before = await paidSoFar(who);
      const client = createLedgerfeedClient({
        baseUrl: proxy.url,
        apiKey: who.key,
        retry: { backoffMs: 50, attemptTimeoutMs: 2_000 },
      });
      const started = Date.now();
      const post = await client.createPost({ type: 'post', content: 'silent line, one charge' });
      expect(post.content).toBe('silent line, one charge');
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);

      const { rows } = await sql<{ key: string }>`
        SELECT key FROM idempotency_keys WHERE account_id = ${who.account.id}::uuid`.execute(h.env.app.db);
      expect(rows.map((row) => row.key)).toEqual([headerIn(proxy.seen[0]!, 'idempotency-key')]);
      const after = await paidSoFar(who);
      expect(after.posts - before.posts).toBe(1);
      expect(before.availableMicro - after.availableMicro).toBe(1_000_000n);
    } finally {
      await proxy.close();
    }
  });

  test('a like whose connection goes silent is not sent again: the error says it timed out', async () => {
    const who = await h.member('sdk_like_stall', 5_000_000n);
    const post = await clientOf(who).createPost({ type: 'post', content: 'like me later' });
    const proxy = await startDropProxy(h.base, (text) => text.startsWith('POST /api/v1/posts/'), 'stall');
    try {
      const client = createLedgerfeedClient({
        baseUrl: proxy.url,
        apiKey: who.key,
        retry: { attemptTimeoutMs: 1_000 },
      });
      const failure = await client.rest
        .POST('/api/v1/posts/{id}/like', { params: { path: { id: post.id } } })
        .catch((error: unknown) => error);
      expect(failure).toMatchObject({ status: 0, error: 'timeout' });
      expect(proxy.seen).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  test('a like whose answer is lost is not sent again: the error says no answer came', async () => {
    const who = await h.member('sdk_like_drop', 5_000_000n);
    const post = await clientOf(who).createPost({ type: 'post', content: 'like me' });
    const proxy = await startDropProxy(h.base, (text) => text.startsWith('POST /api/v1/posts/'));
    try {
      const failure = await clientOf(who, proxy.url)
        .rest.POST('/api/v1/posts/{id}/like', { params: { path: { id: post.id } } })
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(LedgerfeedError);
      expect(failure).toMatchObject({ status: 0, error: 'network_error' });
      expect(proxy.seen).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });

  test('a 429 is waited out for its Retry-After, then the post goes through, paid once', async () => {
    const who = await h.member('sdk_limited', 5_000_000n);
    // The account's post bucket, filled 58 s ago by the service's own limiter: the next post is
    // refused with about 2 s to wait.
    const backdated = createRateLimiter(h.env.app.redis, {
      prefix: h.env.app.config.REDIS_PREFIX,
      multiplier: 100,
      now: () => Date.now() - 58_000,
    });
    const filled = await backdated.consume('post', who.account.id, 1_000);
    expect(filled).toMatchObject({ allowed: true, remaining: 0 });

    const answers: Array<{ status: number; retryAfter: string | null; at: number }> = [];
    const started = Date.now();
    const client = createLedgerfeedClient({
      baseUrl: h.base,
      apiKey: who.key,
      fetch: async (request) => {
        const response = await fetch(request);
        answers.push({
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          at: Date.now() - started,
        });
        return response;
      },
    });
    const before = await paidSoFar(who);
    await client.createPost({ type: 'post', content: 'after the wait' });

    expect(answers[0]).toMatchObject({ status: 429 });
    const retryAfterMs = Number(answers[0]!.retryAfter) * 1000;
    expect(retryAfterMs).toBeGreaterThanOrEqual(1_000);
    expect(answers.at(-1)!.status).toBe(201);
    // The retry left no sooner than Retry-After after the refusal.
    expect(answers.at(-1)!.at - answers[0]!.at).toBeGreaterThanOrEqual(retryAfterMs - 50);
    const after = await paidSoFar(who);
    expect(after.posts - before.posts).toBe(1);
    expect(before.availableMicro - after.availableMicro).toBe(1_000_000n);
  });

  test('an abort during the Retry-After wait ends the call at once, and nothing is paid', async () => {
    const who = await h.member('sdk_abort', 5_000_000n);
    const backdated = createRateLimiter(h.env.app.redis, {
      prefix: h.env.app.config.REDIS_PREFIX,
      multiplier: 100,
      now: () => Date.now() - 50_000,
    });
    expect(await backdated.consume('post', who.account.id, 1_000)).toMatchObject({ allowed: true });
    const before = await paidSoFar(who);
    const started = Date.now();
    const failure = await clientOf(who)
      .createPost({ type: 'post', content: 'never sent' }, { signal: AbortSignal.timeout(300) })
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ status: 0, error: 'aborted' });
    // Well before the ~10 s Retry-After.
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(await paidSoFar(who)).toEqual(before);
  });

  test('a GraphQL paid field over its rate limit is thrown with its Retry-After seconds', async () => {
    const who = await h.member('sdk_long_wait', 5_000_000n);
    const backdated = createRateLimiter(h.env.app.redis, {
      prefix: h.env.app.config.REDIS_PREFIX,
      multiplier: 100,
      now: () => Date.now() - 30_000,
    });
    expect(await backdated.consume('post', who.account.id, 1_000)).toMatchObject({ allowed: true });
    const failure = await clientOf(who)
      .graphql(
        graphql(`
          mutation {
            createPost(input: { type: POST, content: "later" }) {
              id
            }
          }
        `),
        {},
      )
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(LedgerfeedError);
    // A paid field over its bucket is refused inside the operation: HTTP 200, RATE_LIMITED, Retry-After.
    expect(failure).toMatchObject({ status: 200, error: 'RATE_LIMITED' });
    expect((failure as LedgerfeedError).retryAfterSec).toBeGreaterThan(20);
  });

  test('a refusal is one LedgerfeedError with the answer’s error, message and status', async () => {
    const poor = await h.member('sdk_poor', 0n);
    const failure = await clientOf(poor)
      .createPost({ type: 'post', content: 'no money' })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(LedgerfeedError);
    expect(failure).toMatchObject({ status: 402, error: 'insufficient_balance' });
    expect((failure as LedgerfeedError).message).not.toBe('');

    const gqlFailure = await clientOf(poor)
      .graphql(
        graphql(`
          mutation {
            createPost(input: { type: POST, content: "no money" }) {
              swapTx
            }
          }
        `),
        {},
      )
      .catch((error: unknown) => error);
    expect(gqlFailure).toBeInstanceOf(LedgerfeedError);
    expect(gqlFailure).toMatchObject({ error: 'INSUFFICIENT_FUNDS' });
  });
});

describe('pagination', () => {
  test('the feed and the history visit every item once while posts are being added', async () => {
    const author = await h.member('sdk_pager', 80_000_000n);
    const client = clientOf(author);
    const existing: string[] = [];
    for (let i = 0; i < 24; i++)
      existing.push((await client.createPost({ type: 'post', content: `page item ${i}` })).id);
    const historyBefore: string[] = [];
    for await (const transaction of client.transactions({ limit: 50 })) historyBefore.push(transaction.id);

    // Posts arrive while both lists are walked: one more after every page read (pages of 5 and 3).
    const arrived: string[] = [];
    const postBetweenPages = async (seen: number, pageSize: number) => {
      if (seen % pageSize === 0)
        arrived.push((await client.createPost({ type: 'post', content: `arriving ${seen}` })).id);
    };
    const feedIds: string[] = [];
    for await (const post of client.feed({ sort: 'latest', limit: 5 })) {
      feedIds.push(post.id);
      await postBetweenPages(feedIds.length, 5);
    }
    const historyIds: string[] = [];
    for await (const transaction of client.transactions({ limit: 3 })) {
      historyIds.push(transaction.id);
      await postBetweenPages(historyIds.length, 3);
    }
    expect(arrived.length).toBeGreaterThanOrEqual(10);

    expect(new Set(feedIds).size).toBe(feedIds.length);
    expect(feedIds).toEqual(expect.arrayContaining(existing));
    expect(new Set(historyIds).size).toBe(historyIds.length);
    expect(historyIds).toEqual(expect.arrayContaining(historyBefore));
    expect(historyBefore.length).toBeGreaterThanOrEqual(25);
  });

  test('events in order, each once, and followers over GraphQL pages', async () => {
    const star = await h.member('sdk_star', 1_000_000n);
    const fans = await Promise.all([1, 2, 3, 4, 5].map((n) => h.member(`sdk_fan${n}`, 0n)));
    for (const fan of fans) {
      await clientOf(fan).rest.POST('/api/v1/users/{handle}/follow', {
        params: { path: { handle: 'sdk_star' } },
      });
    }
    const followers: string[] = [];
    for await (const follower of clientOf(star).followers('sdk_star', { first: 2 }))
      followers.push(follower.handle);
    expect(followers.sort()).toEqual(fans.map((fan) => fan.account.handle).sort());

    // The worker numbers each account's events after the commit: wait until the five follows are.
    const follows = async (): Promise<number> => {
      const { data } = await clientOf(star).rest.GET('/api/v1/events', {
        params: { query: { limit: '100' } },
      });
      return data!.events.filter((event) => event.type === 'follow.created').length;
    };
    await until('the five follow.created events in the log', follows, (n) => n >= 5);
    const sequences: number[] = [];
    for await (const event of clientOf(star).events({ limit: 2 })) sequences.push(event.sequence);
    expect(sequences.length).toBeGreaterThanOrEqual(5);
    expect(sequences).toEqual(sequences.map((_, i) => sequences[0]! + i));
  });
});
