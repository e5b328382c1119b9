import { sql, type Kysely } from 'kysely';

/**
 * Report runs (issue 50 item 1): one row per run, its parameters, its state and, once succeeded,
 * its file (the key in the report store, its sha256, bytes and rows). The worker role makes the
 * file; BullMQ only schedules (job id = run id), so the row is the truth after any crash.
 *
 * - `params_hash`: sha256 of the canonical parameters (src/domain/reports/report-request.ts).
 *   `report_runs_live` makes one live (pending or running) run per account and parameters: two
 *   identical requests at once insert one row (`ON CONFLICT DO NOTHING`) and both answer it.
 * - `subject_account_id`: the account an `account.statement` is about (null: the whole ledger).
 * - `lease_until`: while `running`, until when its worker vouches for it (renewed as it writes); a
 *   running run past its lease whose job is gone is queued again by the worker's resume sweep.
 * - `report_runs_newest`: an account's runs newest first (GET /reports).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE report_runs (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      account_id uuid NOT NULL REFERENCES accounts (id),
      type text NOT NULL,
      interval_start timestamptz NOT NULL,
      interval_end timestamptz NOT NULL,
      timezone text NOT NULL,
      columns text[] NOT NULL,
      format text NOT NULL,
      subject_account_id uuid REFERENCES accounts (id),
      params_hash text NOT NULL,
      status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
      row_count bigint,
      bytes bigint,
      sha256 text,
      file_key text,
      summary jsonb,
      error text,
      attempts integer NOT NULL DEFAULT 0,
      lease_until timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      CHECK (interval_end > interval_start),
      CHECK (status <> 'succeeded' OR (sha256 IS NOT NULL AND file_key IS NOT NULL AND bytes IS NOT NULL)))`.execute(
    db,
  );
  await sql`CREATE UNIQUE INDEX report_runs_live ON report_runs (account_id, params_hash)
    WHERE status IN ('pending', 'running')`.execute(db);
  await sql`CREATE INDEX report_runs_newest ON report_runs (account_id, created_at DESC, id DESC)`.execute(
    db,
  );
  await sql`CREATE INDEX report_runs_unfinished ON report_runs (created_at)
    WHERE status IN ('pending', 'running')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE report_runs`.execute(db);
}
