import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { PlatformChain } from '../src/adapters/solana/index.js';
import {
  buildTrendingSnapshot,
  currentTrendingScores,
  trendingFeedPage,
  type TrendingDeps,
} from '../src/app/feed/trending.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { commitLike } from '../src/app/write-path/like-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { fundedAccount } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * The trending ranking: versioned snapshots in Redis, cursors that hold (version, position), and
 * what a client sees when scores move between two pages, or when its snapshot expired.
 */
let env: TestEnv;
let platform: PlatformChain;
let deps: TrendingDeps;
const posts: string[] = [];
const fans: string[] = [];

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
  deps = {
    db: env.app.db,
    redis: env.app.redis,
    redisPrefix: env.config.REDIS_PREFIX,
    cursorSecret: env.app.cursorSecret,
  };
  const author = await fundedAccount(env.app, platform, 'tr_author', 6_000_000n);
  for (let i = 0; i < 6; i++) {
    const post = await commitPost(env.app, author.id, { type: 'post', content: `post ${i}` });
    expect(await settlePayment(env.app, post.chainTransactionId)).toBe('confirmed');
    posts.push(post.id);
  }
  for (let i = 0; i < 12; i++) fans.push((await createAccount(env.app, { handle: `tr_fan_${i}` })).id);
});
afterAll(async () => {
  await env?.close();
});

const like = async (postId: string, howMany: number) => {
  for (const fan of fans.slice(0, howMany)) await commitLike(env.app, fan, postId, true);
};

async function allPages(limit: number, between?: () => Promise<void>): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await trendingFeedPage(deps, { cursor, limit });
    pages.push(page.postIds);
    if (!page.hasMore) return pages;
    cursor = page.nextCursor;
    await between?.();
  }
}

describe('trending', () => {
  test('more engagement ranks higher; the score shows in the snapshot', async () => {
    await like(posts[4]!, 3);
    await buildTrendingSnapshot(deps);
    const page = await trendingFeedPage(deps, { limit: 3 });
    expect(page.postIds[0]).toBe(posts[4]);
    expect(page.postIds).toHaveLength(3);
    expect(page.hasMore).toBe(true);
    const [top, unranked] = await currentTrendingScores(deps, [
      posts[4]!,
      '00000000-0000-4000-8000-000000000000',
    ]);
    expect(top).toBeCloseTo(page.scores.get(posts[4]!)!, 9);
    expect(unranked).toBeNull();
  });

  test('paging while scores move: no post repeats, none is missed; a new first page shows the new order', async () => {
    await buildTrendingSnapshot(deps);
    const bottom = (await allPages(6))[0]!.at(-1)!;
    let boosted = false;
    const pages = await allPages(2, async () => {
      if (boosted) return;
      boosted = true;
      // Between two pages the last post becomes the most liked, and the ranking is rebuilt.
      await like(bottom, 12);
      await buildTrendingSnapshot(deps);
    });
    const seen = pages.flat();
    expect(pages.length).toBe(3);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...posts].sort());
    expect((await trendingFeedPage(deps, { limit: 1 })).postIds).toEqual([bottom]);
  });

  test('a forged cursor is invalid_request; a cursor into an expired snapshot is cursor_expired', async () => {
    const first = await trendingFeedPage(deps, { limit: 2 });
    const [payload, mac] = first.nextCursor!.split('.');
    const forged = `${Buffer.from(JSON.stringify([1, 0])).toString('base64url')}.${mac}`;
    await expect(trendingFeedPage(deps, { cursor: forged, limit: 2 })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await expect(trendingFeedPage(deps, { cursor: `${payload}.`, limit: 2 })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await expect(trendingFeedPage(deps, { cursor: 'garbage', limit: 2 })).rejects.toMatchObject({
      code: 'invalid_request',
    });

    const version = await env.app.redis.get(`${deps.redisPrefix}:trending:current`);
    await env.app.redis.del(`${deps.redisPrefix}:trending:v${version}`);
    await expect(trendingFeedPage(deps, { cursor: first.nextCursor, limit: 2 })).rejects.toMatchObject({
      code: 'cursor_expired',
    });
    // Without a cursor the client starts again on a fresh snapshot.
    expect((await trendingFeedPage(deps, { limit: 6 })).postIds).toHaveLength(6);
  });
});
