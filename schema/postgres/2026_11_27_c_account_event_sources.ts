import { sql, type Kysely } from 'kysely';

/**
 * The event log's sources the payment trigger does not cover (issue 39): a like tells the post's
 * author `post.liked`, staged by `set_like` in the like's own statement, so a like and its event
 * commit together or not at all, still in one round trip.
 *
 * Only a like that inserted a row is told, never an unlike, nor a like of one's own post. The
 * dedupe key names the post and the liker, not the like row: a like, unlike and like again stages
 * twice, and the sequencer keeps the first (account_events is unique on (account_id, dedupe_key)),
 * so the author is told once. `data` is staged in its public form: `post_id` and the liker's
 * handle as `by`.
 *
 * A post whose payment is still pending can be liked; if that payment fails the post is deleted
 * and its author keeps the event of a like on a post that no longer exists, as they keep the
 * `payment.failed` that says why.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION set_like(p_account_id uuid, p_post_id uuid, p_liked boolean, p_event text)
      RETURNS TABLE (like_changed boolean, post_like_count integer)
      LANGUAGE plpgsql AS $$
    DECLARE
      v_rows integer;
      v_author uuid;
    BEGIN
      SELECT author_id INTO v_author FROM posts WHERE id = p_post_id;
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
        IF p_liked AND v_author <> p_account_id THEN
          INSERT INTO event_staging (account_id, type, data, dedupe_key)
          SELECT v_author, 'post.liked', jsonb_build_object('post_id', p_post_id, 'by', a.handle),
                 'post.liked:' || p_post_id || ':' || p_account_id
            FROM accounts a WHERE a.id = p_account_id;
        END IF;
      END IF;
      RETURN QUERY SELECT v_rows > 0, p.like_count FROM posts p WHERE p.id = p_post_id;
    END $$`.execute(db);
}

/** set_like as 2026_11_25_a_set_like_function left it. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION set_like(p_account_id uuid, p_post_id uuid, p_liked boolean, p_event text)
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
