import { sql, type Kysely } from 'kysely';

/**
 * Indexes of the read path: the latest feed walks posts by (created_at, id); a post's replies and
 * quotes are counted (and listed) by their parent and quoted post; the trending snapshot reads
 * the last days' posts.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX IF NOT EXISTS posts_latest ON posts (created_at DESC, id DESC)`.execute(db);
  await sql`CREATE INDEX IF NOT EXISTS posts_by_parent ON posts (parent_id) WHERE parent_id IS NOT NULL`.execute(
    db,
  );
  await sql`CREATE INDEX IF NOT EXISTS posts_by_quoted ON posts (quoted_post_id) WHERE quoted_post_id IS NOT NULL`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS posts_by_quoted`.execute(db);
  await sql`DROP INDEX IF EXISTS posts_by_parent`.execute(db);
  await sql`DROP INDEX IF EXISTS posts_latest`.execute(db);
}
