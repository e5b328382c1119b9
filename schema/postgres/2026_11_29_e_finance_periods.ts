import { sql, type Kysely } from 'kysely';

/**
 * Finance periods (issue 50 item 3): a month (`YYYY-MM`) or a day (`YYYY-MM-DD`) finance closes.
 *
 * - `period` is unique on its own: a period closes in one timezone (the one its close named, `UTC`
 *   by default); a close naming another timezone while it is closing or closed is refused (409).
 *   `period_start`/`period_end` are the instants the label means in that timezone ([start, end)).
 * - `status`: `closing` while its three runs (balance.summary, ledger.itemized,
 *   reconciliation.itemized) are made, `closed` once all three succeeded, `open` after a reopen.
 * - `*_run_id`: the frozen runs; a report request with exactly a frozen run's parameters answers
 *   that run while the period is `closed` (src/app/reports/report-runs.ts).
 * - `finance_period_verdicts`: the latest verdict of every movement of the period that was not
 *   `matched` when it closed (few: closing is refused while any is pending, missing or wrong); a
 *   movement of a closed period not listed was `matched` (or had no verdict). The reconciler
 *   compares a new verdict with it and records a `post_close_difference` in the open period.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE finance_periods (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      period text NOT NULL UNIQUE,
      timezone text NOT NULL,
      period_start timestamptz NOT NULL,
      period_end timestamptz NOT NULL,
      status text NOT NULL CHECK (status IN ('open', 'closing', 'closed')),
      closed_by uuid REFERENCES accounts (id),
      closing_at timestamptz,
      closed_at timestamptz,
      balance_run_id uuid REFERENCES report_runs (id),
      ledger_run_id uuid REFERENCES report_runs (id),
      reconciliation_run_id uuid REFERENCES report_runs (id),
      reopened_at timestamptz,
      reopened_by uuid REFERENCES accounts (id),
      CHECK (period_end > period_start),
      CHECK (status <> 'closed' OR closed_at IS NOT NULL))`.execute(db);
  await sql`CREATE INDEX finance_periods_closed ON finance_periods (period_start, period_end)
    WHERE status = 'closed'`.execute(db);
  await sql`
    CREATE TABLE finance_period_verdicts (
      period_id uuid NOT NULL REFERENCES finance_periods (id) ON DELETE CASCADE,
      movement_id uuid NOT NULL,
      signature text NOT NULL,
      status text NOT NULL,
      PRIMARY KEY (period_id, movement_id, signature))`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE finance_period_verdicts`.execute(db);
  await sql`DROP TABLE finance_periods`.execute(db);
}
