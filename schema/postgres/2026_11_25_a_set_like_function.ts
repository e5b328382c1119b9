import { sql, type Kysely } from 'kysely';

/**
 * A like or unlike in one round trip (issue 21): `set_like` checks the post, inserts or deletes the
 * like row, writes its 'post.liked' / 'post.unliked' event when the state changed, and answers the
 * post's like count as the likes trigger left it. The count is a statement of its own inside the
 * function, so it sees this like's trigger and every like committed before it, which a
 * data-modifying CTE could not (its triggers fire after its last SELECT). Before, the API sent the
 * change and read the count back in two statements; each statement cost the API's event loop about
 * as much as the database's work (a round trip, a pool checkout, a query compile).
 *
 * A post missing (unknown id, or deleted since by a failed payment) answers no row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION set_like(p_account_id uuid, p_post_id uuid, p_liked boolean, p_event text)
      RETURNS TABLE (like_changed boolean, post_like_count integer)
      LANGUAGE plpgsql AS $$
    DECLARE
      v_rows integer;
    BEGIN
      PERFORM 1 FROM posts WHERE id = p_post_id;
      IF NOT FOUND THEN
        RETURN;
      END IF;
      IF p_liked THEN
        INSERT INTO likes (account_id, post_id) VALUES (p_account_id, p_post_id)
          ON CONFLICT (account_id, post_id) DO NOTHING;
      ELSE
        DELETE FROM likes WHERE account_id = p_account_id AND post_id = p_post_id;
      END IF;
      GET DIAGNOSTICS v_rows = ROW_COUNT;
      IF v_rows > 0 THEN
        INSERT INTO domain_events (type, actor_id, post_id) VALUES (p_event, p_account_id, p_post_id);
      END IF;
      RETURN QUERY SELECT v_rows > 0, p.like_count FROM posts p WHERE p.id = p_post_id;
    END $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION set_like(uuid, uuid, boolean, text)`.execute(db);
}
