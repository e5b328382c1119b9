import { sql, type Kysely } from 'kysely';

/**
 * Recording a ledger movement becomes one function call, so a paid write (the movement, its domain
 * row, the signed transaction in the outbox, the domain event) can commit as one statement, one
 * round trip with no BEGIN/COMMIT. Before, a paid post took six round trips and held its pooled
 * connection (and its balance row lock) across all of them: under load the pool ran dry and each
 * post waited ~25 ms for a connection, then ~12 ms per round trip.
 *
 * `ledger_record_movement` does what recordMovement did in TypeScript, in the same order:
 *   1. a movement whose idempotency key is already recorded returns that movement (`replayed`);
 *   2. a user's ledger account in a currency is created on its first movement;
 *   3. the user rows are locked in id order (two movements touching the same accounts never
 *      deadlock) and every change is checked against the locked row: a debit beyond the balance
 *      (or beyond `pending`, for an unhold) raises SQLSTATE LF402 with a JSON detail naming the
 *      currency, what is available and what is required (as text), and the whole statement rolls back;
 *   4. the user rows change (balance, pending, total_spent, total_earned), summed per row;
 *   5. the movement and its legs are inserted, in the order given.
 * Platform accounts (treasury, ...) keep no stored balance (see migration 8): they only get legs.
 * The deferred trigger still checks at commit that the legs balance per currency.
 *
 * The arrays are per leg, all the same length. The per-leg changes (how a leg moves balance and
 * pending, and whether it counts as spent or earned) are decided by the caller, which knows the
 * movement's `pending` mode; only user legs carry them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION ledger_record_movement(
      p_kind text,
      p_idempotency_key text,
      p_reverses uuid,
      p_refs text[],
      p_account_ids uuid[],
      p_currencies text[],
      p_amounts bigint[],
      p_counts text[],
      p_balance bigint[],
      p_pending bigint[],
      p_spent bigint[],
      p_earned bigint[],
      OUT movement_id uuid,
      OUT replayed boolean)
    LANGUAGE plpgsql AS $fn$
    DECLARE
      v_ids uuid[];
      v_row record;
    BEGIN
      IF p_idempotency_key IS NOT NULL THEN
        SELECT m.id INTO movement_id FROM ledger_movements m WHERE m.idempotency_key = p_idempotency_key;
        IF FOUND THEN
          replayed := true;
          RETURN;
        END IF;
      END IF;
      replayed := false;

      INSERT INTO ledger_accounts (kind, account_id, currency)
      SELECT DISTINCT 'user', l.account_id, l.currency
        FROM unnest(p_refs, p_account_ids, p_currencies) AS l (ref, account_id, currency)
       WHERE l.ref = 'user'
         AND NOT EXISTS (SELECT 1 FROM ledger_accounts a
                          WHERE a.account_id = l.account_id AND a.currency = l.currency)
      ON CONFLICT (account_id, currency) DO NOTHING;

      -- One index lookup per leg: (account_id, currency) for a user, the platform kinds' partial
      -- unique index for the others.
      SELECT array_agg(
               CASE WHEN l.ref = 'user'
                    THEN (SELECT a.id FROM ledger_accounts a
                           WHERE a.account_id = l.account_id AND a.currency = l.currency)
                    ELSE (SELECT a.id FROM ledger_accounts a
                           WHERE a.account_id IS NULL AND a.kind = l.ref AND a.currency = l.currency)
               END ORDER BY l.n)
        INTO v_ids
        FROM unnest(p_refs, p_account_ids, p_currencies) WITH ORDINALITY AS l (ref, account_id, currency, n);
      IF v_ids IS NULL OR array_position(v_ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ledger movement %: a leg names no ledger account', p_kind;
      END IF;

      FOR v_row IN
        WITH changes AS (
          SELECT c.id, sum(c.balance) AS balance, sum(c.pending) AS pending
            FROM unnest(v_ids, p_refs, p_balance, p_pending) AS c (id, ref, balance, pending)
           WHERE c.ref = 'user'
           GROUP BY c.id)
        SELECT a.id, a.currency, a.balance AS held_balance, a.pending AS held_pending,
               c.balance, c.pending
          FROM ledger_accounts a JOIN changes c ON c.id = a.id
         ORDER BY a.id
           FOR UPDATE OF a
      LOOP
        IF v_row.held_balance + v_row.balance < 0 OR v_row.held_pending + v_row.pending < 0 THEN
          RAISE EXCEPTION USING
            ERRCODE = 'LF402',
            MESSAGE = 'insufficient balance',
            DETAIL = json_build_object(
              'currency', v_row.currency,
              -- bigints as text: JSON numbers would be read back as floats.
              'available', (CASE WHEN v_row.balance < 0 THEN v_row.held_balance ELSE v_row.held_pending END)::text,
              'required', (-(v_row.balance + v_row.pending))::text)::text;
        END IF;
      END LOOP;

      UPDATE ledger_accounts a
         SET balance = a.balance + c.balance, pending = a.pending + c.pending,
             total_spent = a.total_spent + c.spent, total_earned = a.total_earned + c.earned
        FROM (SELECT u.id, sum(u.balance) AS balance, sum(u.pending) AS pending,
                     sum(u.spent) AS spent, sum(u.earned) AS earned
                FROM unnest(v_ids, p_refs, p_balance, p_pending, p_spent, p_earned)
                     AS u (id, ref, balance, pending, spent, earned)
               WHERE u.ref = 'user'
               GROUP BY u.id) c
       WHERE a.id = c.id;

      INSERT INTO ledger_movements (kind, idempotency_key, reverses_id)
      VALUES (p_kind, p_idempotency_key, p_reverses)
      RETURNING id INTO movement_id;

      INSERT INTO ledger_legs (movement_id, ledger_account_id, amount, counts)
      SELECT movement_id, l.id, l.amount, l.counts
        FROM unnest(v_ids, p_amounts, p_counts) WITH ORDINALITY AS l (id, amount, counts, n)
       ORDER BY l.n;
    END $fn$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION ledger_record_movement(text, text, uuid, text[], uuid[], text[], bigint[], text[],
    bigint[], bigint[], bigint[], bigint[])`.execute(db);
}
