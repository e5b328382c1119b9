import { sql, type Kysely } from 'kysely';

/**
 * An Idempotency-Key whose first request died is never stuck, and never charges twice (issue 22).
 *
 * Each in-flight row gets an owner (a random token per request) and a lease (`lease_until`, kept
 * by the living owner). A paid write records the resource it created (`resource_kind`,
 * `resource_id`) on its key's row in the statement that commits the money move, through
 * `idempotency_record_resource`, and only while its token still owns the row: a request whose key
 * was taken over (its lease ran out) fails with SQLSTATE LF409 and nothing of it commits. So a
 * repeat that takes an expired row over knows for sure whether money moved: a recorded resource
 * is the answer to rebuild; none means nothing was charged and the request may run again.
 *
 * Rows already in flight here were written by code that records no resource: they keep the old
 * rule (in flight until the key expires, 24 h), as do rows that code inserts during a rolling
 * deploy (the defaults), since whether their money moved cannot be known.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE idempotency_keys
      ADD COLUMN owner uuid,
      ADD COLUMN lease_until timestamptz,
      ADD COLUMN resource_kind text CHECK (resource_kind IN ('post', 'repost', 'send', 'swap')),
      ADD COLUMN resource_id uuid,
      ADD CONSTRAINT idempotency_keys_resource_whole CHECK ((resource_kind IS NULL) = (resource_id IS NULL))`.execute(
    db,
  );
  await sql`
    UPDATE idempotency_keys SET owner = gen_random_uuid(), lease_until = created_at + interval '24 hours'`.execute(
    db,
  );
  await sql`
    ALTER TABLE idempotency_keys
      ALTER COLUMN owner SET DEFAULT gen_random_uuid(),
      ALTER COLUMN owner SET NOT NULL,
      ALTER COLUMN lease_until SET DEFAULT now() + interval '24 hours',
      ALTER COLUMN lease_until SET NOT NULL`.execute(db);
  await sql`
    CREATE FUNCTION idempotency_record_resource(
      p_account_id uuid, p_key text, p_owner uuid, p_kind text, p_resource_id uuid)
    RETURNS uuid LANGUAGE plpgsql AS $fn$
    BEGIN
      UPDATE idempotency_keys SET resource_kind = p_kind, resource_id = p_resource_id
       WHERE account_id = p_account_id AND key = p_key AND owner = p_owner AND response_status IS NULL;
      IF NOT FOUND THEN
        RAISE EXCEPTION USING
          ERRCODE = 'LF409',
          MESSAGE = 'the Idempotency-Key is no longer owned by this request (a retry took it over)';
      END IF;
      RETURN p_resource_id;
    END $fn$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION idempotency_record_resource(uuid, text, uuid, text, uuid)`.execute(db);
  await sql`
    ALTER TABLE idempotency_keys
      DROP CONSTRAINT idempotency_keys_resource_whole,
      DROP COLUMN resource_id,
      DROP COLUMN resource_kind,
      DROP COLUMN lease_until,
      DROP COLUMN owner`.execute(db);
}
