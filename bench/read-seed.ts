import { sql } from 'kysely';
import type { Account } from '../src/domain/accounts/account.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import type { RunningService } from '../src/service.js';

/**
 * The data the read benchmarks read, written straight into Postgres (not timed): BENCH_POSTS posts
 * by `authors` accounts, a tenth as many replies, likes and reposts, each paid row with its ledger
 * movement and outbox row as the write path leaves them (confirmed on chain).
 *
 * Engagement sits where readers look: replies and reposts point at the newest 150 posts, so the
 * first page has counts to compute. About 2% of the older posts, and some older replies and
 * reposts, have a failed payment: every read must hide them (and the check costs what it costs in
 * production), but none is on or counted by the first page, so a reader that cannot hide them
 * (PostGraphile's plain `allPosts`) still answers the same first page.
 */
export interface ReadSeed {
  authors: Account[];
  /** A key with every scope of the first author, for the readers. */
  readKey: string;
  posts: number;
  replies: number;
  likes: number;
  reposts: number;
  failed: number;
}

/** Posts up to this rank (1 = newest) never fail and are what replies and reposts point at. */
const FRESH = 300;

export async function seedReadData(
  service: RunningService,
  options: { posts: number; authors: number; tag: string },
): Promise<ReadSeed> {
  const { app } = service;
  if (options.authors < 2)
    throw new Error('the read seed needs at least 2 authors (nobody reposts or likes their own)');
  const authors: Account[] = [];
  for (let i = 0; i < options.authors; i++) {
    authors.push(await createAccount(app, { handle: `${options.tag}_a${i}`, displayName: `Author ${i}` }));
  }
  const { key: readKey } = await createApiKey(app.apiKeys, authors[0]!.id);
  const ids = authors.map((a) => a.id);
  const posts = options.posts;
  const replies = Math.max(1, Math.floor(posts / 10));
  const db = app.db;

  // Paid rows: a movement per row (its idempotency key carries the row's number), its outbox row,
  // then the row itself. `failed(n)` decides which payments failed on chain.
  await sql`
    WITH m AS (
      INSERT INTO ledger_movements (kind, idempotency_key)
      SELECT 'post', 'seed:post:' || n FROM generate_series(1, ${posts}::int) n
      RETURNING id, split_part(idempotency_key, ':', 3)::int AS n),
    c AS (
      INSERT INTO chain_transactions (movement_id, signature, wire, blockhash, last_valid_block_height, status)
      SELECT id, 'seed-post-' || n, '\\x00'::bytea, 'seed', 0,
             CASE WHEN n > ${FRESH} AND n % 50 = 0 THEN 'failed' ELSE 'confirmed' END FROM m)
    INSERT INTO posts (author_id, type, content, movement_id, created_at)
    SELECT (${ids}::uuid[])[1 + n % ${ids.length}], 'post', 'bench post #' || n, id,
           now() - make_interval(secs => n)
      FROM m`.execute(db);

  // Replies, interleaved in time with the posts (reply k half a second after post 10k). Every
  // 25th is failed and then points at an old post, so that no first-page count includes it.
  await sql`
    WITH m AS (
      INSERT INTO ledger_movements (kind, idempotency_key)
      SELECT 'post', 'seed:reply:' || k FROM generate_series(1, ${replies}::int) k
      RETURNING id, split_part(idempotency_key, ':', 3)::int AS k),
    c AS (
      INSERT INTO chain_transactions (movement_id, signature, wire, blockhash, last_valid_block_height, status)
      SELECT id, 'seed-reply-' || k, '\\x00'::bytea, 'seed', 0,
             CASE WHEN k % 25 = 0 AND k * 10 > ${FRESH} THEN 'failed' ELSE 'confirmed' END FROM m),
    parent AS (
      SELECT m.id AS movement_id, m.k, p.id AS parent_id
        FROM m JOIN ledger_movements pm
          ON pm.idempotency_key = 'seed:post:' ||
             CASE WHEN m.k % 25 = 0 AND m.k * 10 > ${FRESH}
                  THEN LEAST(${posts}::int, ${FRESH} + m.k) ELSE 1 + (m.k * 7) % 150 END
        JOIN posts p ON p.movement_id = pm.id)
    INSERT INTO posts (author_id, type, content, parent_id, movement_id, created_at)
    SELECT (${ids}::uuid[])[1 + (k * 3) % ${ids.length}], 'reply', 'bench reply #' || k, parent_id,
           movement_id, now() - make_interval(secs => k * 10 - 0.5)
      FROM parent`.execute(db);

  // Reposts: account a reposts fresh post n when (n + a) % 4 = 0, never its own; plus one failed
  // repost of every 100th old post.
  await sql`
    WITH pairs AS (
      SELECT a, n, 'confirmed' AS status FROM generate_series(1, ${ids.length}::int) a,
             generate_series(1, 150) n
       WHERE (n + a) % 4 = 0 AND 1 + n % ${ids.length} <> a
      UNION ALL
      SELECT 1 + (n + 1) % ${ids.length}, n, 'failed'
        FROM generate_series(${FRESH + 100}::int, ${posts}::int, 100) n),
    m AS (
      INSERT INTO ledger_movements (kind, idempotency_key)
      SELECT 'repost', 'seed:repost:' || a || ':' || n || ':' || status FROM pairs
      RETURNING id, split_part(idempotency_key, ':', 3)::int AS a, split_part(idempotency_key, ':', 4)::int AS n,
                split_part(idempotency_key, ':', 5) AS status),
    c AS (
      INSERT INTO chain_transactions (movement_id, signature, wire, blockhash, last_valid_block_height, status)
      SELECT id, 'seed-repost-' || a || '-' || n, '\\x00'::bytea, 'seed', 0, status FROM m)
    INSERT INTO reposts (reposter_id, post_id, movement_id, created_at)
    SELECT (${ids}::uuid[])[m.a], p.id, m.id, now() - make_interval(secs => m.n - 0.25)
      FROM m JOIN ledger_movements pm ON pm.idempotency_key = 'seed:post:' || m.n
      JOIN posts p ON p.movement_id = pm.id`.execute(db);

  // Likes (free, no payment): account a likes post n when (31n + 17a) % 5 = 0, never its own.
  await sql`
    INSERT INTO likes (account_id, post_id, created_at)
    SELECT (${ids}::uuid[])[a], p.id, p.created_at + interval '1 second'
      FROM posts p JOIN ledger_movements pm ON pm.id = p.movement_id AND pm.idempotency_key LIKE 'seed:post:%',
           LATERAL (SELECT split_part(pm.idempotency_key, ':', 3)::int AS n) x,
           generate_series(1, ${ids.length}::int) a
     WHERE (31 * x.n + 17 * a) % 5 = 0 AND p.author_id <> (${ids}::uuid[])[a]`.execute(db);
  await sql`ANALYZE`.execute(db);

  const { rows } = await sql<{ likes: number; reposts: number; failed: number }>`
    SELECT (SELECT count(*)::int FROM likes) AS likes,
           (SELECT count(*)::int FROM reposts) AS reposts,
           (SELECT count(*)::int FROM chain_transactions WHERE status = 'failed') AS failed`.execute(db);
  const counts = rows[0]!;
  return { authors, readKey, posts, replies, ...counts };
}
