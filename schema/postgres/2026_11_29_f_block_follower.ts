import { sql, type Kysely } from 'kysely';

/**
 * The block follower (issue 52): one cursor over the chain's blocks replaces a cursor per address.
 *
 * - `block_follower_cursor`: the one row saying which block (slot and blockhash) the follower has
 *   read up to, at `confirmed`. Moved in the same transaction as the credits of the blocks it passes.
 * - `followed_blocks`: the blocks read and not yet far behind `finalized`, with their parent: what a
 *   fork is walked back over (the newest is dropped until the chain's parent matches again).
 * - `followed_token_accounts`: the USDC and native associated token accounts of every user wallet,
 *   derived once (a derivation costs ~0.2 ms: 1,000,000 wallets would cost minutes at each start)
 *   by the follower from `follow_queue`, which a trigger fills as wallets are set. `seq` lets every
 *   follower process load the ones another derived (a cheap index probe each round).
 * - `deposit_credits`: one row per (signature, token account) credited from a block, with the block
 *   it was seen in and how far it went: `confirmed` (held in `pending`), `finalized` (spendable) or
 *   `reversed` (its block was dropped by a fork before it was finalized). At most one live credit
 *   per key; a signature landing again on the new branch after its reversal is credited again.
 * - A deposit that lands again after a reversal is keyed `deposit:<signature>:<slot>` (the first
 *   landing keeps `deposit:<signature>`): the trigger of 2026_11_29_c follows both, and
 *   `deposit_transactions` allows one live row per signature, the reversed ones kept.
 * - `followed_transactions`: the outbox's own transactions as the follower saw them in a confirmed
 *   block (slot, blockhash, fee, error, token movements): the reconciler judges them from here
 *   instead of a getTransaction each, and at finalized checks only that the block is the finalized
 *   one (a getBlock per slot, not per payment). Kept an hour.
 * - `balance_checks`: the daily comparison of every followed account's ledger balance with its
 *   on-chain balance, one row per day run.
 */
const DEPOSIT_KEY = sql.lit('^deposit:[1-9A-HJ-NP-Za-km-z]{64,88}(:[0-9]+)?$');

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE block_follower_cursor (
      id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
      slot bigint NOT NULL,
      blockhash text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now())`.execute(db);
  await sql`
    CREATE TABLE followed_blocks (
      slot bigint PRIMARY KEY,
      blockhash text NOT NULL,
      parent_slot bigint NOT NULL,
      previous_blockhash text NOT NULL)`.execute(db);
  await sql`
    CREATE TABLE followed_token_accounts (
      token_account text PRIMARY KEY,
      owner text NOT NULL,
      mint text NOT NULL,
      account_id uuid NOT NULL REFERENCES accounts (id),
      seq bigserial NOT NULL UNIQUE)`.execute(db);
  await sql`
    CREATE TABLE follow_queue (
      wallet_address text PRIMARY KEY,
      account_id uuid NOT NULL REFERENCES accounts (id),
      queued_at timestamptz NOT NULL DEFAULT now())`.execute(db);
  await sql`
    CREATE FUNCTION queue_followed_wallet() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO follow_queue (wallet_address, account_id) VALUES (NEW.wallet_address, NEW.id)
      ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $fn$`.execute(db);
  await sql`
    CREATE TRIGGER accounts_queue_followed_wallet
      AFTER INSERT OR UPDATE OF wallet_address ON accounts
      FOR EACH ROW
      WHEN (NEW.wallet_address IS NOT NULL)
      EXECUTE FUNCTION queue_followed_wallet()`.execute(db);
  await sql`
    INSERT INTO follow_queue (wallet_address, account_id)
    SELECT wallet_address, id FROM accounts WHERE wallet_address IS NOT NULL`.execute(db);

  await sql`
    CREATE TABLE deposit_credits (
      id bigserial PRIMARY KEY,
      signature text NOT NULL,
      token_account text NOT NULL,
      account_id uuid NOT NULL REFERENCES accounts (id),
      amount bigint NOT NULL CHECK (amount > 0),
      movement_id uuid NOT NULL REFERENCES ledger_movements (id),
      slot bigint NOT NULL,
      blockhash text NOT NULL,
      status text NOT NULL DEFAULT 'confirmed' CHECK (status IN ('confirmed', 'finalized', 'reversed')),
      credited_at timestamptz NOT NULL DEFAULT now(),
      settled_at timestamptz)`.execute(db);
  await sql`CREATE UNIQUE INDEX deposit_credits_once ON deposit_credits (signature, token_account)
    WHERE status <> 'reversed'`.execute(db);
  await sql`CREATE INDEX deposit_credits_unsettled ON deposit_credits (slot)
    WHERE status = 'confirmed'`.execute(db);

  await sql`ALTER TABLE deposit_transactions DROP CONSTRAINT deposit_transactions_status_check`.execute(db);
  await sql`ALTER TABLE deposit_transactions ADD CONSTRAINT deposit_transactions_status_check
    CHECK (status IN ('confirmed', 'finalized', 'reversed'))`.execute(db);
  await sql`ALTER TABLE deposit_transactions DROP CONSTRAINT deposit_transactions_signature_key`.execute(db);
  await sql`CREATE UNIQUE INDEX deposit_transactions_live_signature ON deposit_transactions (signature)
    WHERE status <> 'reversed'`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION follow_deposit() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO deposit_transactions (movement_id, signature, confirmed_at)
      VALUES (NEW.id, split_part(substr(NEW.idempotency_key, length('deposit:') + 1), ':', 1), NEW.created_at)
      ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $fn$`.execute(db);
  await sql`DROP TRIGGER ledger_movements_follow_deposit ON ledger_movements`.execute(db);
  await sql`
    CREATE TRIGGER ledger_movements_follow_deposit
      AFTER INSERT ON ledger_movements
      FOR EACH ROW
      WHEN (NEW.kind = 'deposit' AND NEW.idempotency_key ~ ${DEPOSIT_KEY})
      EXECUTE FUNCTION follow_deposit()`.execute(db);

  await sql`
    CREATE TABLE followed_transactions (
      signature text PRIMARY KEY,
      slot bigint NOT NULL,
      blockhash text NOT NULL,
      block_time timestamptz NOT NULL,
      fee bigint NOT NULL,
      err jsonb,
      movements jsonb NOT NULL,
      seen_at timestamptz NOT NULL DEFAULT now())`.execute(db);
  await sql`CREATE INDEX followed_transactions_seen ON followed_transactions (seen_at)`.execute(db);
  await sql`
    CREATE TABLE balance_checks (
      day date PRIMARY KEY,
      started_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      accounts integer NOT NULL DEFAULT 0,
      mismatches integer NOT NULL DEFAULT 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE balance_checks`.execute(db);
  await sql`DROP TABLE followed_transactions`.execute(db);
  await sql`DROP TABLE deposit_credits`.execute(db);
  await sql`DROP TRIGGER accounts_queue_followed_wallet ON accounts`.execute(db);
  await sql`DROP FUNCTION queue_followed_wallet()`.execute(db);
  await sql`DROP TABLE follow_queue`.execute(db);
  await sql`DROP TABLE followed_token_accounts`.execute(db);
  await sql`DROP TABLE followed_blocks`.execute(db);
  await sql`DROP TABLE block_follower_cursor`.execute(db);
}
