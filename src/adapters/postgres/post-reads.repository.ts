import { sql, type RawBuilder } from 'kysely';
import type {
  PostEngagement,
  PostReadStore,
  PostSummary,
  TimelineRow,
} from '../../domain/posts/post-reads.js';
import type { PostType } from '../../domain/posts/post-rules.js';
import type { Db } from './db.js';

/**
 * The read path's SQL. Every method is one statement, so a page costs a constant number of them
 * whatever its size: the page of posts with their authors, then one grouped count of its
 * engagement (the service puts them together).
 *
 * A post, reply or repost whose payment failed on chain was refunded: it is left out everywhere
 * (lists, single reads, counts). Pending payments are shown: the payer's dollar already left, and
 * nearly all of them land.
 */
export function createPostReadStore(db: Db): PostReadStore {
  const posts = () =>
    db
      .selectFrom('posts as p')
      .innerJoin('accounts as a', 'a.id', 'p.author_id')
      .where(paid(sql.ref('p.movement_id')))
      .select(postColumns());

  return {
    summaries: async (ids) => {
      if (ids.length === 0) return [];
      const rows = await posts()
        .where('p.id', 'in', [...ids])
        .execute();
      return rows.map(toSummary);
    },

    engagement: async (ids) => {
      const counts = new Map<string, PostEngagement>();
      if (ids.length === 0) return counts;
      const list = [...ids];
      const { rows } = await sql<{ post_id: string; kind: 'like' | 'reply' | 'repost'; n: number }>`
        SELECT post_id, kind, count(*)::int AS n FROM (
          SELECT l.post_id, 'like' AS kind FROM likes l WHERE l.post_id = ANY(${list}::uuid[])
          UNION ALL
          SELECT r.parent_id, 'reply' FROM posts r
          WHERE r.parent_id = ANY(${list}::uuid[]) AND ${paid(sql.ref('r.movement_id'))}
          UNION ALL
          SELECT rp.post_id, 'repost' FROM reposts rp
          WHERE rp.post_id = ANY(${list}::uuid[]) AND ${paid(sql.ref('rp.movement_id'))}
        ) engagement
        GROUP BY post_id, kind`.execute(db);
      for (const row of rows) {
        const entry = counts.get(row.post_id) ?? { likeCount: 0, replyCount: 0, repostCount: 0 };
        if (row.kind === 'like') entry.likeCount = row.n;
        else if (row.kind === 'reply') entry.replyCount = row.n;
        else entry.repostCount = row.n;
        counts.set(row.post_id, entry);
      }
      return counts;
    },

    latest: async ({ limit, after }) => {
      let query = posts().orderBy('p.created_at', 'desc').orderBy('p.id', 'desc').limit(limit);
      if (after) {
        query = query.where(
          sql<boolean>`(p.created_at, p.id) < (${after.at}::timestamptz, ${after.id}::uuid)`,
        );
      }
      return (await query.execute()).map(toSummary);
    },

    timeline: async (accountId, { limit, after }) => {
      // The account's posts and reposts as one stream of (entry id, post id, time); Postgres
      // pushes the keyset condition into both branches of the UNION ALL.
      let query = db
        .with('entries', (qb) =>
          qb
            .selectFrom('posts as own')
            .where('own.author_id', '=', accountId)
            .select([
              'own.id as entry_id',
              'own.id as post_id',
              'own.created_at as at',
              sql<boolean>`false`.as('is_repost'),
            ])
            .unionAll(
              qb
                .selectFrom('reposts as r')
                .where('r.reposter_id', '=', accountId)
                .where(paid(sql.ref('r.movement_id')))
                .select([
                  'r.id as entry_id',
                  'r.post_id',
                  'r.created_at as at',
                  sql<boolean>`true`.as('is_repost'),
                ]),
            ),
        )
        .selectFrom('entries as e')
        .innerJoin('posts as p', 'p.id', 'e.post_id')
        .innerJoin('accounts as a', 'a.id', 'p.author_id')
        // The post itself (own or reposted) must be paid for; this also hides own failed posts.
        .where(paid(sql.ref('p.movement_id')))
        .select([
          'e.entry_id',
          'e.at',
          'e.is_repost',
          exactText(sql.ref('e.at')).as('at_exact'),
          ...postColumns(),
        ])
        .orderBy('e.at', 'desc')
        .orderBy('e.entry_id', 'desc')
        .limit(limit);
      if (after) {
        query = query.where(sql<boolean>`(e.at, e.entry_id) < (${after.at}::timestamptz, ${after.id}::uuid)`);
      }
      const rows = await query.execute();
      return rows.map((row): TimelineRow => ({
        entryId: row.entry_id,
        atExact: row.at_exact,
        post: toSummary(row),
        repostedAt: row.is_repost ? row.at : null,
      }));
    },

    replies: async (parentId, { limit, after }) => {
      // Oldest first: a thread reads in the order it was written.
      let query = posts()
        .where('p.parent_id', '=', parentId)
        .orderBy('p.created_at', 'asc')
        .orderBy('p.id', 'asc')
        .limit(limit);
      if (after) {
        query = query.where(
          sql<boolean>`(p.created_at, p.id) > (${after.at}::timestamptz, ${after.id}::uuid)`,
        );
      }
      return (await query.execute()).map(toSummary);
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

/** True unless the movement's chain transaction failed (refunded): such rows are never shown. */
/** The columns every post read selects: the post (`p`) and its author (`a`). */
function postColumns() {
  return [
    'p.id',
    'p.type',
    'p.content',
    'p.parent_id',
    'p.quoted_post_id',
    'p.created_at',
    exactText(sql.ref('p.created_at')).as('created_at_exact'),
    'a.id as author_id',
    'a.handle',
    'a.display_name',
    'a.avatar_url',
    'a.wallet_address',
  ] as const;
}

function paid(movementId: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`NOT EXISTS (
    SELECT 1 FROM chain_transactions failed
    WHERE failed.movement_id = ${movementId} AND failed.status = 'failed')`;
}

/** A timestamptz as ISO 8601 UTC to the microsecond: a JavaScript Date would round it to the ms. */
function exactText(column: RawBuilder<unknown>): RawBuilder<string> {
  return sql<string>`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
}

interface SummaryRow {
  id: string;
  type: PostType;
  content: string;
  parent_id: string | null;
  quoted_post_id: string | null;
  created_at: Date;
  created_at_exact: string;
  author_id: string;
  handle: string;
  display_name: string;
  avatar_url: string | null;
  wallet_address: string | null;
}

function toSummary(row: SummaryRow): PostSummary {
  return {
    id: row.id,
    type: row.type,
    content: row.content,
    parentId: row.parent_id,
    quotedPostId: row.quoted_post_id,
    createdAt: row.created_at,
    createdAtExact: row.created_at_exact,
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
