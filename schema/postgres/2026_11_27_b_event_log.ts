import { sql, type Kysely } from 'kysely';

/**
 * The account event log and webhooks (issue 39).
 *
 * - `event_staging`: what a change has to tell, written by the change's own transaction (a
 *   trigger or the statement itself) with no lock on anything shared: an INSERT into a table
 *   nobody else updates. Rows are for one account each.
 * - `account_events`: the log clients read and webhooks deliver. One writer (the event sequencer,
 *   under an advisory lock) moves committed staging rows here and numbers them per account
 *   (`sequence`, dense, from `account_event_heads`), so a reader paging by `sequence` can never
 *   skip a row that commits late: a row is only ever added above every number already visible.
 *   Numbering in the change's own transaction would have needed a lock on a per-account counter
 *   held until commit, by every paid write and every payment batch (deadlocks between batches
 *   touching the same creators in another order, and a hot row per popular creator).
 * - `dedupe_key`: engagement is told once even when its payment is confirmed twice (a payment
 *   that vanished after a confirmation and landed again).
 * - `webhook_endpoints`: an endpoint's delivery state is its cursor in the account's log
 *   (`delivered_through`) and the attempt state of the event after it: deliveries go out in
 *   sequence order, one at a time per endpoint, so nothing else is needed to never lose one.
 * - `webhook_deliveries`: every attempt, for the delivery log.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE event_staging (
      id bigserial PRIMARY KEY,
      account_id uuid NOT NULL,
      type text NOT NULL,
      data jsonb NOT NULL,
      dedupe_key text,
      created_at timestamptz NOT NULL DEFAULT now())`.execute(db);

  await sql`
    CREATE TABLE account_events (
      account_id uuid NOT NULL,
      sequence bigint NOT NULL,
      id text NOT NULL DEFAULT 'evt_' || replace(gen_random_uuid()::text, '-', ''),
      type text NOT NULL,
      data jsonb NOT NULL,
      dedupe_key text,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (account_id, sequence))`.execute(db);
  await sql`CREATE UNIQUE INDEX account_events_id ON account_events (id)`.execute(db);
  await sql`CREATE UNIQUE INDEX account_events_dedupe ON account_events (account_id, dedupe_key)
    WHERE dedupe_key IS NOT NULL`.execute(db);
  await sql`CREATE INDEX account_events_by_time ON account_events (created_at)`.execute(db);
  await sql`
    CREATE TABLE account_event_heads (
      account_id uuid PRIMARY KEY,
      last_sequence bigint NOT NULL)`.execute(db);

  await sql`
    CREATE TABLE webhook_endpoints (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      account_id uuid NOT NULL REFERENCES accounts (id),
      url text NOT NULL,
      event_types text[] NOT NULL,
      secret text NOT NULL,
      previous_secret text,
      previous_secret_expires_at timestamptz,
      status text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
      disabled_reason text,
      delivered_through bigint NOT NULL DEFAULT 0,
      attempt integer NOT NULL DEFAULT 0,
      failing_since timestamptz,
      next_attempt_at timestamptz,
      lease_owner text,
      lease_expires_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now())`.execute(db);
  await sql`CREATE INDEX webhook_endpoints_by_account ON webhook_endpoints (account_id)`.execute(db);
  await sql`
    CREATE TABLE webhook_deliveries (
      id bigserial PRIMARY KEY,
      endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
      event_id text NOT NULL,
      sequence bigint NOT NULL,
      attempt integer NOT NULL,
      status_code integer,
      error text,
      duration_ms integer NOT NULL,
      delivered boolean NOT NULL,
      next_attempt_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now())`.execute(db);
  await sql`CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, id DESC)`.execute(
    db,
  );
  await sql`CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (created_at)`.execute(db);

  await paymentEventTrigger(db);
}

/**
 * Every state a payment reaches (confirmed, finalized, failed) is staged for every account with a
 * leg in its movement, in the statement that moves the outbox row: one INSERT per statement (a
 * statement trigger with transition tables), however many payments a worker settles at once.
 * A first confirmation also tells the authors engaged with (reply, quote, repost) and the
 * recipient of a send: only then, so nobody is told of a reply whose payment later fails.
 * The payment's own facts (signature, slot, the account's signed amount, the post it paid for)
 * are read here, while the post of a failed payment still exists; the sequencer turns the
 * movement's kind into the history's transaction type.
 */
async function paymentEventTrigger(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION stage_payment_events() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
    BEGIN
      WITH changed AS (
        SELECT n.movement_id, n.signature, n.slot, n.status, o.status AS old_status
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE n.status IS DISTINCT FROM o.status
           AND n.status IN ('confirmed', 'finalized', 'failed')),
      legs AS (
        SELECT c.movement_id, c.signature, c.slot, c.status, la.account_id,
               coalesce(sum(l.amount) FILTER (WHERE la.currency = 'usdc'), 0) AS amount,
               coalesce(sum(l.amount) FILTER (WHERE la.currency = 'native'), 0) AS native_amount
          FROM changed c
          JOIN ledger_legs l ON l.movement_id = c.movement_id
          JOIN ledger_accounts la ON la.id = l.ledger_account_id AND la.account_id IS NOT NULL
         GROUP BY c.movement_id, c.signature, c.slot, c.status, la.account_id)
      INSERT INTO event_staging (account_id, type, data)
      SELECT legs.account_id, 'payment.' || legs.status,
             jsonb_build_object(
               'swap_tx', legs.signature,
               'movement_kind', m.kind,
               'amount_micro', legs.amount::text,
               'native_amount', legs.native_amount::text,
               'related_post_id', coalesce(p.id, rp.post_id),
               'counterparty', other.handle,
               'slot', legs.slot)
        FROM legs
        JOIN ledger_movements m ON m.id = legs.movement_id
        LEFT JOIN posts p ON p.movement_id = legs.movement_id
        LEFT JOIN reposts rp ON rp.movement_id = legs.movement_id
        LEFT JOIN sends s ON s.movement_id = legs.movement_id
        LEFT JOIN accounts other
          ON other.id = CASE WHEN s.sender_id = legs.account_id THEN s.recipient_id ELSE s.sender_id END
       ORDER BY legs.movement_id, legs.account_id;

      WITH first_confirmed AS (
        SELECT n.movement_id, n.signature
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE n.status = 'confirmed' AND o.status IN ('signed', 'sent'))
      INSERT INTO event_staging (account_id, type, data, dedupe_key)
      SELECT told.account_id, told.type, told.data, told.type || ':' || told.movement_id
        FROM (
          SELECT parent.author_id AS account_id,
                 CASE p.type WHEN 'reply' THEN 'post.replied' ELSE 'post.quoted' END AS type,
                 CASE p.type
                   WHEN 'reply' THEN jsonb_build_object('post_id', parent.id, 'reply_id', p.id, 'by', a.handle)
                   ELSE jsonb_build_object('post_id', parent.id, 'quote_id', p.id, 'by', a.handle)
                 END AS data,
                 f.movement_id
            FROM first_confirmed f
            JOIN posts p ON p.movement_id = f.movement_id AND p.type IN ('reply', 'quote')
            JOIN posts parent ON parent.id = coalesce(p.parent_id, p.quoted_post_id)
            JOIN accounts a ON a.id = p.author_id
           WHERE parent.author_id <> p.author_id
          UNION ALL
          SELECT original.author_id, 'post.reposted',
                 jsonb_build_object('post_id', original.id, 'repost_id', r.id, 'by', a.handle),
                 f.movement_id
            FROM first_confirmed f
            JOIN reposts r ON r.movement_id = f.movement_id
            JOIN posts original ON original.id = r.post_id
            JOIN accounts a ON a.id = r.reposter_id
           WHERE original.author_id <> r.reposter_id
          UNION ALL
          SELECT s.recipient_id, 'send.received',
                 jsonb_build_object('from', a.handle, 'amount_micro', s.amount_micro::text,
                                    'memo', s.memo, 'swap_tx', f.signature),
                 f.movement_id
            FROM first_confirmed f
            JOIN sends s ON s.movement_id = f.movement_id
            JOIN accounts a ON a.id = s.sender_id) AS told;
      RETURN NULL;
    END $fn$`.execute(db);
  await sql`
    CREATE TRIGGER chain_transactions_stage_events
      AFTER UPDATE ON chain_transactions
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
      FOR EACH STATEMENT EXECUTE FUNCTION stage_payment_events()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER chain_transactions_stage_events ON chain_transactions`.execute(db);
  await sql`DROP FUNCTION stage_payment_events()`.execute(db);
  await sql`DROP TABLE webhook_deliveries`.execute(db);
  await sql`DROP TABLE webhook_endpoints`.execute(db);
  await sql`DROP TABLE account_event_heads`.execute(db);
  await sql`DROP TABLE account_events`.execute(db);
  await sql`DROP TABLE event_staging`.execute(db);
}
