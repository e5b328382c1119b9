import { sql, type RawBuilder } from 'kysely';
import type { PostReadStore, PostView, TimelineRow } from '../../domain/posts/post-read-model.js';
import type { PostType } from '../../domain/posts/post-rules.js';
import { compiledQuery } from './compiled-queries.js';
import type { Db } from './db.js';

/** A page of shown posts with their authors: what every post read selects from. */
const posts = (db: Db) =>
  db
    .selectFrom('posts as p')
    .innerJoin('accounts as a', 'a.id', 'p.author_id')
    .where(shown('p'))
    .select(postColumns());

// The feed's statements, compiled once (compiled-queries.ts): they are what a read cache miss runs.
// Newest first walks posts_latest_shown (created_at DESC, id DESC) WHERE NOT failed: the first
// page and every later one read `limit` index entries and `limit` authors by primary key.
const newest = (db: Db) => posts(db).orderBy('p.created_at', 'desc').orderBy('p.id', 'desc');
const latestFirst = compiledQuery((db, v: { limit: number }) => newest(db).limit(v.limit));
const latestAfter = compiledQuery((db, v: { limit: number; at: string; id: string }) =>
  newest(db)
    .where(sql<boolean>`(p.created_at, p.id) < (${v.at}::timestamptz, ${v.id}::uuid)`)
    .limit(v.limit),
);
const byIds = compiledQuery((db, v: { ids: readonly string[] }) =>
  posts(db).where('p.id', '=', sql<string>`ANY(${v.ids}::uuid[])`),
);

/**
 * The read path's SQL. Every method is one statement: the page of posts joined to their authors,
 * with the counts stored on each post row (schema/postgres/2026_11_24_f_stored_counters.ts), so a
 * page costs one statement whatever its size, and a popular post costs what any post costs.
 *
 * A post, reply or repost whose payment failed on chain was refunded: it is left out everywhere
 * (lists, single reads, counts); `failed` on its own row says so. Pending payments are shown: the
 * payer's dollar already left, and nearly all of them land.
 */
export function createPostReadStore(db: Db): PostReadStore {
  return {
    byIds: async (ids) => {
      if (ids.length === 0) return [];
      return (await byIds(db, { ids })).map(toView);
    },

    withContext: async (id) => {
      const rows = await posts(db)
        .where(
          'p.id',
          'in',
          sql<string>`(SELECT unnest(ARRAY[t.id, t.parent_id, t.quoted_post_id])
                         FROM posts t WHERE t.id = ${id}::uuid)`,
        )
        .execute();
      return rows.map(toView);
    },

    latest: async ({ limit, after }) =>
      (after
        ? await latestAfter(db, { limit, at: after.at, id: after.id })
        : await latestFirst(db, { limit })
      ).map(toView),

    timeline: async (accountId, { limit, after }) => {
      // The account's shown posts and its shown reposts of shown posts, each branch walking its
      // own index (posts_by_author, reposts_by_reposter) from the cursor for at most `limit` rows,
      // then merged: a page reads about 2 x limit index entries however long the history is. Every
      // filter sits inside its branch, so the merged page is never cut short by a later filter.
      const before = (time: RawBuilder<unknown>, id: RawBuilder<unknown>) =>
        after ? sql`AND (${time}, ${id}) < (${after.at}::timestamptz, ${after.id}::uuid)` : sql``;
      const { rows } = await sql<
        PostRow & { entry_id: string; at: Date; at_exact: string; is_repost: boolean }
      >`
        WITH entries AS (
          (SELECT own.id AS entry_id, own.id AS post_id, own.created_at AS at, false AS is_repost
             FROM posts own
            WHERE own.author_id = ${accountId}::uuid AND NOT own.failed
                  ${before(sql.ref('own.created_at'), sql.ref('own.id'))}
            ORDER BY own.created_at DESC, own.id DESC
            LIMIT ${limit})
          UNION ALL
          (SELECT r.id, r.post_id, r.created_at, true
             FROM reposts r JOIN posts original ON original.id = r.post_id
            WHERE r.reposter_id = ${accountId}::uuid AND NOT r.failed AND NOT original.failed
                  ${before(sql.ref('r.created_at'), sql.ref('r.id'))}
            ORDER BY r.created_at DESC, r.id DESC
            LIMIT ${limit}))
        SELECT e.entry_id, e.at, e.is_repost, ${exactText(sql.ref('e.at'))} AS at_exact,
               p.id, p.type, p.content, p.parent_id, p.quoted_post_id,
               ${exactText(sql.ref('p.created_at'))} AS created_at_exact,
               p.like_count, p.reply_count, p.quote_count, p.repost_count,
               a.id AS author_id, a.handle, a.display_name, a.avatar_url, a.wallet_address
          FROM entries e
          JOIN posts p ON p.id = e.post_id
          JOIN accounts a ON a.id = p.author_id
         ORDER BY e.at DESC, e.entry_id DESC
         LIMIT ${limit}`.execute(db);
      return rows.map((row): TimelineRow => ({
        entryId: row.entry_id,
        atExact: row.at_exact,
        post: toView(row),
        repostedAt: row.is_repost ? row.at : null,
      }));
    },

    replies: async (parentId, { limit, after }) => {
      // Oldest first: a thread reads in the order it was written.
      let query = posts(db)
        .where('p.parent_id', '=', parentId)
        .orderBy('p.created_at', 'asc')
        .orderBy('p.id', 'asc')
        .limit(limit);
      if (after) {
        query = query.where(
          sql<boolean>`(p.created_at, p.id) > (${after.at}::timestamptz, ${after.id}::uuid)`,
        );
      }
      return (await query.execute()).map(toView);
    },

    likedBy: async (accountId, ids) => {
      if (ids.length === 0) return new Set();
      const rows = await db
        .selectFrom('likes')
        .select('post_id')
        .where('account_id', '=', accountId)
        .where('post_id', '=', sql<string>`ANY(${[...ids]}::uuid[])`)
        .execute();
      return new Set(rows.map((row) => row.post_id));
    },
  };
}

/**
 * The columns every post read selects: the post (`p`) with its counts, and its author (`a`). The
 * timeline's raw SQL lists the same columns.
 */
function postColumns() {
  return [
    'p.id',
    'p.type',
    'p.content',
    'p.parent_id',
    'p.quoted_post_id',
    exactText(sql.ref('p.created_at')).as('created_at_exact'),
    'p.like_count',
    'p.reply_count',
    'p.quote_count',
    'p.repost_count',
    'a.id as author_id',
    'a.handle',
    'a.display_name',
    'a.avatar_url',
    'a.wallet_address',
  ] as const;
}

/**
 * Not failed, as SQL text rather than a bound `false`: a prepared statement's generic plan must
 * still see the predicate of the partial index posts_latest_shown (`WHERE NOT failed`), which a
 * `failed = $1` would hide from it.
 */
function shown(alias: 'p' | 'r'): RawBuilder<boolean> {
  return sql<boolean>`NOT ${sql.ref(`${alias}.failed`)}`;
}

/** A timestamptz as ISO 8601 UTC to the microsecond: a JavaScript Date would round it to the ms. */
function exactText(column: RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

interface PostRow {
  id: string;
  type: PostType;
  content: string;
  parent_id: string | null;
  quoted_post_id: string | null;
  created_at_exact: string;
  like_count: number;
  reply_count: number;
  quote_count: number;
  repost_count: number;
  author_id: string;
  handle: string;
  display_name: string;
  avatar_url: string | null;
  wallet_address: string | null;
}

function toView(row: PostRow): PostView {
  return {
    id: row.id,
    type: row.type,
    content: row.content,
    parentId: row.parent_id,
    quotedPostId: row.quoted_post_id,
    // From the exact text rather than a second column: V8 reads ISO 8601 itself, 2.5 times faster
    // than pg's parser reads Postgres's text, and to the same millisecond (truncated).
    createdAt: new Date(row.created_at_exact),
    createdAtExact: row.created_at_exact,
    likeCount: row.like_count,
    replyCount: row.reply_count,
    quoteCount: row.quote_count,
    repostCount: row.repost_count,
    author: {
      id: row.author_id,
      handle: row.handle,
      displayName: row.display_name,
      avatarUrl: row.avatar_url,
      // Every account gets a wallet at sign-up; the column is nullable only for the moment between.
      walletAddress: row.wallet_address ?? '',
    },
  };
}
