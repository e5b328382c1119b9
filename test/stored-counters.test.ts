import { Migrator, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { postgresMigrations } from '../schema/postgres/index.js';
import { createDb, type Db } from '../src/adapters/postgres/index.js';
import { fundUsdc } from '../src/adapters/solana/index.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { drainOnChain } from './support/chain-tampering.js';
import { paymentsSettled } from './support/settled.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { databaseUrl } from './support/urls.js';

/**
 * The counters stored with what they count (schema/postgres/2026_11_24_f_stored_counters.ts):
 * posts.like_count / reply_count / quote_count / repost_count, posts.failed and reposts.failed,
 * accounts.post_count / follower_count / following_count. After every kind of change (including
 * payments that fail on chain and are refunded, a failed repost replaced by a new attempt, unlikes
 * and unfollows) each one must equal a fresh count from the rows, and the backfill must give the
 * same numbers for rows written before the migration.
 */
let h: ServiceHarness;

beforeAll(async () => {
  // Limits off: the concurrency test sends dozens of requests at once. Read caches off: every
  // read here must show what the database holds now (caching has its own tests).
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0', READ_CACHE_TTL_MS: '0' });
});
afterAll(async () => {
  await h?.close();
});

type Json = Record<string, unknown>;

async function call(who: Member, method: string, path: string, body?: unknown) {
  const response = await h.call(who, method, path, body);
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : {}) as Json };
}

async function publish(who: Member, body: Json): Promise<string> {
  const response = await call(who, 'POST', '/posts', body);
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.id as string;
}

const post = (who: Member, content: string) => publish(who, { type: 'post', content });
const reply = (who: Member, parentId: string, content = 'a reply') =>
  publish(who, { type: 'reply', content, parent_id: parentId });
const quote = (who: Member, quotedId: string, content = 'a quote') =>
  publish(who, { type: 'quote', content, quoted_post_id: quotedId });
const repost = (who: Member, postId: string) => call(who, 'POST', `/posts/${postId}/repost`);
const like = (who: Member, postId: string) => call(who, 'POST', `/posts/${postId}/like`);
const unlike = (who: Member, postId: string) => call(who, 'DELETE', `/posts/${postId}/like`);
const followUser = (who: Member, handle: string) => call(who, 'POST', `/users/${handle}/follow`);
const unfollowUser = (who: Member, handle: string) => call(who, 'DELETE', `/users/${handle}/follow`);

/**
 * Every stored counter or flag that differs from a fresh count of the rows it counts, with both
 * values (empty when all agree). The fresh counts are written from the definitions, not from the
 * triggers: a post is hidden when its chain transaction failed; like_count counts every like row;
 * reply_count, quote_count and repost_count count the rows whose own payment did not fail;
 * post_count counts the account's posts, replies and quotes whose payment did not fail.
 */
async function drift(db: Db): Promise<unknown[]> {
  const { rows } = await sql<Json>`
    WITH failed AS (SELECT movement_id FROM chain_transactions WHERE status = 'failed'),
    posts_fresh AS (
      SELECT p.id,
             json_build_array(p.failed, p.like_count, p.reply_count, p.quote_count, p.repost_count) AS stored,
             json_build_array(
               p.movement_id IN (SELECT movement_id FROM failed),
               (SELECT count(*) FROM likes k WHERE k.post_id = p.id),
               (SELECT count(*) FROM posts r WHERE r.parent_id = p.id
                  AND r.movement_id NOT IN (SELECT movement_id FROM failed)),
               (SELECT count(*) FROM posts q WHERE q.quoted_post_id = p.id
                  AND q.movement_id NOT IN (SELECT movement_id FROM failed)),
               (SELECT count(*) FROM reposts s WHERE s.post_id = p.id
                  AND s.movement_id NOT IN (SELECT movement_id FROM failed))) AS fresh
        FROM posts p),
    reposts_fresh AS (
      SELECT r.id, json_build_array(r.failed) AS stored,
             json_build_array(r.movement_id IN (SELECT movement_id FROM failed)) AS fresh
        FROM reposts r),
    accounts_fresh AS (
      SELECT a.id, json_build_array(a.post_count, a.follower_count, a.following_count) AS stored,
             json_build_array(
               (SELECT count(*) FROM posts p WHERE p.author_id = a.id
                  AND p.movement_id NOT IN (SELECT movement_id FROM failed)),
               (SELECT count(*) FROM follows f WHERE f.followee_id = a.id),
               (SELECT count(*) FROM follows f WHERE f.follower_id = a.id)) AS fresh
        FROM accounts a)
    SELECT 'post' AS row, id, stored, fresh FROM posts_fresh WHERE stored::text <> fresh::text
    UNION ALL
    SELECT 'repost', id, stored, fresh FROM reposts_fresh WHERE stored::text <> fresh::text
    UNION ALL
    SELECT 'account', id, stored, fresh FROM accounts_fresh WHERE stored::text <> fresh::text`.execute(db);
  return rows;
}

/** How many rows of each kind the run left hidden (so a test shows it exercised failures). */
async function hiddenRows(db: Db): Promise<{ posts: number; reposts: number }> {
  const { rows } = await sql<{ posts: number; reposts: number }>`
    SELECT (SELECT count(*)::int FROM posts WHERE failed) AS posts,
           (SELECT count(*)::int FROM reposts WHERE failed) AS reposts`.execute(db);
  return rows[0]!;
}

describe('counters after a mixed run of writes through the API', () => {
  let ann: Member;
  let ben: Member;
  let cat: Member;
  let dan: Member;
  let eve: Member;
  let p1: string;
  let p2: string;
  let p3: string;

  beforeAll(async () => {
    const members = await Promise.all(
      ['sc_ann', 'sc_ben', 'sc_cat', 'sc_dan', 'sc_eve'].map((handle) => h.member(handle, 20_000_000n)),
    );
    [ann, ben, cat, dan, eve] = members as [Member, Member, Member, Member, Member];
  });

  test('posts, replies, quotes, reposts, likes, unlikes, follows and unfollows move every counter', async () => {
    p1 = await post(ann, 'first');
    p2 = await post(ann, 'second');
    p3 = await post(ben, 'third');
    const r1 = await reply(ben, p1);
    await reply(cat, p1);
    await reply(ann, r1, 'a reply to a reply');
    await quote(dan, p1);
    await quote(cat, p3);
    for (const who of [ben, cat]) expect((await repost(who, p1)).status).toBe(201);
    expect((await repost(dan, p3)).status).toBe(201);
    for (const who of [ann, ben, cat, dan]) expect((await like(who, p1)).status).toBe(200);
    expect((await like(ben, p1)).body).toEqual({ liked: true, like_count: 4 }); // idempotent
    expect((await like(cat, p2)).status).toBe(200);
    expect((await unlike(cat, p2)).body).toEqual({ liked: false, like_count: 0 });
    expect((await unlike(dan, p2)).status).toBe(200); // never liked: nothing moves
    expect((await unlike(dan, p1)).body).toEqual({ liked: false, like_count: 3 });
    for (const who of [ben, cat, dan]) expect((await followUser(who, 'sc_ann')).status).toBe(200);
    expect((await followUser(ben, 'sc_ann')).status).toBe(200); // idempotent
    expect((await followUser(ann, 'sc_ben')).status).toBe(200);
    expect((await unfollowUser(cat, 'sc_ann')).status).toBe(200);
    expect((await unfollowUser(cat, 'sc_ann')).status).toBe(200); // idempotent

    await paymentsSettled(h.env.app.db);
    expect(await drift(h.env.app.db)).toEqual([]);
    const view = (await call(eve, 'GET', `/posts/${p1}`)).body;
    expect(view).toMatchObject({ like_count: 3, reply_count: 2, repost_count: 2 });
    const counts = await h.env.app.db
      .selectFrom('posts')
      .select(['like_count', 'reply_count', 'quote_count', 'repost_count'])
      .where('id', '=', p1)
      .executeTakeFirstOrThrow();
    expect(counts).toEqual({ like_count: 3, reply_count: 2, quote_count: 1, repost_count: 2 });
    expect((await call(eve, 'GET', '/users/sc_ann')).body).toMatchObject({
      post_count: 3, // two posts and a reply
      follower_count: 2,
      following_count: 1,
    });
  });

  test('payments that fail on chain are refunded and hide their post, reply, quote or repost from every count', async () => {
    // Eve's USDC leaves her wallet behind the ledger's back: each paid request fails on chain.
    await drainOnChain(h.env.app, h.platform, eve.account, 20_000_000n);
    const before = (await call(eve, 'GET', `/posts/${p1}`)).body;
    const failing = [
      call(eve, 'POST', '/posts', { type: 'post', content: 'never paid' }),
      call(eve, 'POST', '/posts', { type: 'reply', content: 'never paid', parent_id: p1 }),
      call(eve, 'POST', '/posts', { type: 'quote', content: 'never paid', quoted_post_id: p1 }),
      repost(eve, p1),
    ];
    for (const attempt of failing) {
      const response = await attempt;
      expect(response.status, JSON.stringify(response.body)).toBe(503);
      expect(response.body).toMatchObject({
        error: 'unavailable',
        message: expect.stringMatching(/refunded/),
      });
    }
    await paymentsSettled(h.env.app.db);
    expect(await hiddenRows(h.env.app.db)).toEqual({ posts: 3, reposts: 1 });
    expect(await drift(h.env.app.db)).toEqual([]);
    const after = (await call(eve, 'GET', `/posts/${p1}`)).body;
    expect(after).toMatchObject({
      reply_count: before.reply_count,
      repost_count: before.repost_count,
      like_count: before.like_count,
    });
    expect((await call(ann, 'GET', '/users/sc_eve')).body).toMatchObject({ post_count: 0 });

    // The money is back on chain: the repost is tried again; the failed row makes way for it.
    await fundUsdc(h.env.app.rpc, h.platform, eve.account.walletAddress, 20_000_000n);
    expect((await repost(eve, p1)).status).toBe(201);
    await post(eve, 'paid this time');
    await paymentsSettled(h.env.app.db);
    expect(await hiddenRows(h.env.app.db)).toEqual({ posts: 3, reposts: 0 });
    expect(await drift(h.env.app.db)).toEqual([]);
    expect((await call(eve, 'GET', `/posts/${p1}`)).body).toMatchObject({
      repost_count: (before.repost_count as number) + 1,
    });
    expect((await call(ann, 'GET', '/users/sc_eve')).body).toMatchObject({ post_count: 1 });
  });

  test('a reply shown while its payment was in flight is uncounted when the payment fails', async () => {
    const fan = await h.member('sc_fan', 1_000_000n);
    // Written as the API writes it, but settled here (the outbox sweeper leaves it alone 3 s).
    const shown = await commitPost(h.env.app, fan.account.id, {
      type: 'reply',
      content: 'counted, then not',
      parentId: p2,
    });
    expect((await call(ann, 'GET', `/posts/${p2}`)).body).toMatchObject({ reply_count: 1 });
    expect((await call(ann, 'GET', '/users/sc_fan')).body).toMatchObject({ post_count: 1 });
    await drainOnChain(h.env.app, h.platform, fan.account, 1_000_000n);
    expect(await settlePayment(h.env.app, shown.chainTransactionId)).toBe('failed');
    expect((await call(ann, 'GET', `/posts/${p2}`)).body).toMatchObject({ reply_count: 0 });
    expect((await call(ann, 'GET', '/users/sc_fan')).body).toMatchObject({ post_count: 0 });
    expect((await call(ann, 'GET', `/posts/${shown.id}`)).status).toBe(404);
    expect(await drift(h.env.app.db)).toEqual([]);
  });

  test('GET /users/{handle} counts shown posts, replies and quotes; GraphQL answers the same counts', async () => {
    const profile = (await call(ben, 'GET', '/users/sc_cat')).body;
    // cat: one reply, one quote (no post of its own), follows nobody now, followed by nobody.
    expect(profile).toMatchObject({ post_count: 2, follower_count: 0, following_count: 0 });
    const { data } = await h.gql(
      ben,
      '{ ann: user(handle: "sc_ann") { postCount followerCount followingCount } cat: user(handle: "sc_cat") { postCount } }',
    );
    expect(data).toEqual({
      ann: { postCount: 3, followerCount: 2, followingCount: 1 },
      cat: { postCount: 2 },
    });
  });
});

describe('counters under concurrent writes', () => {
  test('16 concurrent reposts and likes of one post, and follows both ways at once, neither deadlock nor drift', async () => {
    const author = await h.member('cc_author', 2_000_000n);
    const target = await post(author, 'popular');
    const crowd = await Promise.all(
      Array.from({ length: 16 }, (_, i) => h.member(`cc_fan_${i}`, 2_000_000n)),
    );
    const engagement = await Promise.all(
      crowd.flatMap((fan) => [repost(fan, target), like(fan, target), followUser(fan, 'cc_author')]),
    );
    expect(engagement.map((r) => r.status).filter((s) => s >= 300)).toEqual([]);

    // Follows both ways at once (A->B with B->A), the author following back everyone who follows
    // it, while the author posts (its row's post_count moves in the same instants).
    const both = await Promise.all([
      ...crowd.map((fan, i) => followUser(fan, `cc_fan_${(i + 1) % 16}`)),
      ...crowd.map((fan, i) => followUser(fan, `cc_fan_${(i + 15) % 16}`)),
      ...crowd.map((fan) => followUser(author, fan.account.handle)),
      publish(author, { type: 'post', content: 'while followed' }).then(() => ({ status: 201 })),
    ]);
    expect(both.map((r) => r.status).filter((s) => s >= 300)).toEqual([]);
    await paymentsSettled(h.env.app.db);
    expect((await call(author, 'GET', `/posts/${target}`)).body).toMatchObject({
      like_count: 16,
      repost_count: 16,
    });
    expect((await call(author, 'GET', '/users/cc_author')).body).toMatchObject({
      post_count: 2,
      follower_count: 16,
      following_count: 16,
    });
    expect((await call(author, 'GET', '/users/cc_fan_3')).body).toMatchObject({
      follower_count: 3, // fan 2, fan 4 and the author
      following_count: 3, // fan 2, fan 4 and the author
    });

    // And all of it undone at once.
    const undone = await Promise.all([
      ...crowd.map((fan) => unlike(fan, target)),
      ...crowd.map((fan, i) => unfollowUser(fan, `cc_fan_${(i + 1) % 16}`)),
      ...crowd.map((fan, i) => unfollowUser(fan, `cc_fan_${(i + 15) % 16}`)),
      ...crowd.map((fan) => unfollowUser(fan, 'cc_author')),
      ...crowd.map((fan) => unfollowUser(author, fan.account.handle)),
    ]);
    expect(undone.map((r) => r.status).filter((s) => s >= 300)).toEqual([]);
    expect((await call(author, 'GET', '/users/cc_author')).body).toMatchObject({
      follower_count: 0,
      following_count: 0,
    });
    expect((await call(author, 'GET', `/posts/${target}`)).body).toMatchObject({ like_count: 0 });
    expect(await drift(h.env.app.db)).toEqual([]);
  });

  test('follows A->B and B->A racing in tight rounds never deadlock (each locks both accounts in id order)', async () => {
    // Straight to Postgres on 8 connections, no HTTP in between, so the two UPDATEs of opposite
    // follows interleave as closely as they can; a trigger updating them in follower/followee order
    // deadlocks here within a few rounds (measured: 707 deadlocks in 300 rounds).
    const members = await Promise.all(['dl_a', 'dl_b', 'dl_c', 'dl_d'].map((handle) => h.member(handle, 0n)));
    const [a, b, c, d] = members.map((m) => m.account.id) as [string, string, string, string];
    const pairs = [
      [a, b],
      [b, a],
      [c, d],
      [d, c],
      [a, c],
      [c, a],
      [b, d],
      [d, b],
    ] as const;
    const pool = new pg.Pool({ connectionString: h.env.config.DATABASE_URL, max: 8 });
    const failures: string[] = [];
    try {
      for (let round = 0; round < 40; round++) {
        for (const statement of [
          'INSERT INTO follows (follower_id, followee_id) VALUES ($1, $2)',
          'DELETE FROM follows WHERE follower_id = $1 AND followee_id = $2',
        ]) {
          const results = await Promise.allSettled(pairs.map((pair) => pool.query(statement, [...pair])));
          for (const result of results) {
            if (result.status === 'rejected') failures.push(String(result.reason));
          }
        }
      }
    } finally {
      await pool.end();
    }
    expect(failures).toEqual([]);
    expect(await drift(h.env.app.db)).toEqual([]);
  });
});

describe('the migration', () => {
  const name = `sc_backfill_${process.pid}_${Date.now().toString(36)}`;
  let admin: pg.Client;
  let db: Db;
  let migrator: Migrator;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: databaseUrl(inject('postgresUrl'), 'postgres') });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    db = createDb(databaseUrl(inject('postgresUrl'), name), { max: 2 });
    migrator = new Migrator({
      db,
      provider: { getMigrations: () => Promise.resolve(postgresMigrations) },
      migrationTableName: 'kysely_migration',
    });
  });
  afterAll(async () => {
    await db?.destroy();
    await admin?.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await admin?.end();
  });

  test('backfills every counter from rows written before it, and down then up again gives the same', async () => {
    const before = await migrator.migrateTo('2026_11_24_e_released_handles');
    expect(before.error).toBeUndefined();

    // Five accounts; posts by a1..a3 (every fourth one's payment failed); replies and quotes of
    // the first posts (some failed, one replying to a failed post); reposts (some failed); likes
    // (some on failed posts); follows.
    await sql`INSERT INTO accounts (handle, display_name) SELECT 'bf_' || g, 'B ' || g FROM generate_series(1, 5) g`.execute(
      db,
    );
    await sql`
      CREATE TABLE seed AS
      SELECT g AS n, gen_random_uuid() AS movement_id, gen_random_uuid() AS post_id,
             (SELECT id FROM accounts WHERE handle = 'bf_' || (1 + g % 3)) AS author_id
        FROM generate_series(1, 40) g`.execute(db);
    await sql`INSERT INTO ledger_movements (id, kind) SELECT movement_id, 'post' FROM seed`.execute(db);
    // Posts 1-20 are posts; 21-30 reply to post (n - 20); 31-40 quote post (n - 30).
    await sql`
      INSERT INTO posts (id, author_id, type, content, parent_id, quoted_post_id, movement_id, created_at)
      SELECT s.post_id, s.author_id,
             CASE WHEN s.n <= 20 THEN 'post' WHEN s.n <= 30 THEN 'reply' ELSE 'quote' END,
             'seed ' || s.n,
             CASE WHEN s.n BETWEEN 21 AND 30 THEN (SELECT post_id FROM seed t WHERE t.n = s.n - 20) END,
             CASE WHEN s.n > 30 THEN (SELECT post_id FROM seed t WHERE t.n = s.n - 30) END,
             s.movement_id, now() - make_interval(secs => 100 - s.n)
        FROM seed s ORDER BY s.n`.execute(db);
    await sql`
      INSERT INTO chain_transactions (movement_id, signature, wire, blockhash, last_valid_block_height, status)
      SELECT movement_id, 'seed-' || n, '\\x00', 'bh', 1, CASE WHEN n % 4 = 0 THEN 'failed' ELSE 'confirmed' END
        FROM seed`.execute(db);
    // Reposts of posts 1..6 by accounts 4 and 5; the ones of even posts by account 5 failed.
    await sql`
      WITH r AS (
        SELECT gen_random_uuid() AS movement_id, s.post_id, a.id AS reposter_id, s.n, a.handle
          FROM seed s CROSS JOIN accounts a WHERE s.n <= 6 AND a.handle IN ('bf_4', 'bf_5')),
      m AS (INSERT INTO ledger_movements (id, kind) SELECT movement_id, 'repost' FROM r),
      c AS (INSERT INTO chain_transactions (movement_id, signature, wire, blockhash, last_valid_block_height, status)
            SELECT movement_id, 'seed-r-' || movement_id, '\\x00', 'bh', 1,
                   CASE WHEN handle = 'bf_5' AND n % 2 = 0 THEN 'failed' ELSE 'confirmed' END FROM r)
      INSERT INTO reposts (reposter_id, post_id, movement_id) SELECT reposter_id, post_id, movement_id FROM r`.execute(
      db,
    );
    await sql`
      INSERT INTO likes (account_id, post_id)
      SELECT a.id, s.post_id FROM seed s CROSS JOIN accounts a WHERE (s.n + ascii(right(a.handle, 1))) % 3 = 0`.execute(
      db,
    );
    await sql`
      INSERT INTO follows (follower_id, followee_id)
      SELECT a.id, b.id FROM accounts a JOIN accounts b ON a.id <> b.id AND a.handle < b.handle`.execute(db);
    await sql`DROP TABLE seed`.execute(db);

    const after = await migrator.migrateToLatest();
    expect(after.error).toBeUndefined();
    expect(after.results?.map((r) => r.migrationName)).toContain('2026_11_24_f_stored_counters');
    expect(await drift(db)).toEqual([]);
    // 10 of the 40 posts failed (n % 4 = 0); 3 of the 12 reposts (by bf_5 of posts 2, 4, 6).
    expect(await hiddenRows(db)).toEqual({ posts: 10, reposts: 3 });
    const first = await db
      .selectFrom('posts')
      .select(['like_count', 'reply_count', 'quote_count', 'repost_count'])
      .where('content', '=', 'seed 1')
      .executeTakeFirstOrThrow();
    // Post 1: reply 21 and quote 31 paid; reposted by bf_4 and bf_5; liked by bf_2 and bf_5.
    expect(first).toEqual({ like_count: 2, reply_count: 1, quote_count: 1, repost_count: 2 });
    const accounts = await db
      .selectFrom('accounts')
      .select(['handle', 'post_count', 'follower_count', 'following_count'])
      .orderBy('handle')
      .execute();
    // Authors: n % 3 = 0 -> bf_1, 1 -> bf_2, 2 -> bf_3; shown: n % 4 <> 0.
    expect(accounts.map((a) => [a.handle, a.post_count, a.follower_count, a.following_count])).toEqual([
      ['bf_1', 10, 0, 4],
      ['bf_2', 10, 1, 3],
      ['bf_3', 10, 2, 2],
      ['bf_4', 0, 3, 1],
      ['bf_5', 0, 4, 0],
    ]);

    // Down to before it (the columns, triggers and indexes go; the old indexes come back; later
    // migrations go first) and up again.
    expect((await migrator.migrateTo('2026_11_24_e_released_handles')).error).toBeUndefined();
    const { rows: columns } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM information_schema.columns
       WHERE table_name IN ('posts', 'reposts', 'accounts')
         AND column_name IN ('failed', 'like_count', 'post_count', 'follower_count')`.execute(db);
    expect(columns[0]!.n).toBe(0);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
    expect(await drift(db)).toEqual([]);
    expect(await hiddenRows(db)).toEqual({ posts: 10, reposts: 3 });
  });
});
