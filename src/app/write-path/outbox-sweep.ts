import type { Db } from '../../adapters/postgres/db.js';
import { unfinishedOutboxRows } from '../../adapters/postgres/outbox-reads.repository.js';
import type { PaymentsQueue, Resubmitted } from '../../adapters/redis/payments-queue.js';

/**
 * A row this much younger than now is left to the request that committed it: that request
 * enqueues it itself within milliseconds, and a sweep racing it would only turn its quiet enqueue
 * into a 'duplicated' one (a second row read).
 */
export const SWEEP_MIN_AGE_MS = 3_000;
/** Rows one sweep looks at: bounds the Postgres read and the Redis round trips of one round. */
export const SWEEP_BATCH = 500;

/** Where the next sweep resumes: after this row, in (created_at, id) order. */
export interface SweepCursor {
  /** Postgres's own text of the timestamp: a JS Date would drop the microseconds. */
  createdAt: string;
  id: string;
}

export interface SweepResult {
  /** Unfinished rows looked at. */
  seen: number;
  /** Rows whose job was added or revived (the rest were already queued or running). */
  resubmitted: number;
  /** Where the next sweep goes on; null: this sweep reached the end, start over. */
  next: SweepCursor | null;
}

/**
 * One round of the outbox sweeper: hands every unfinished outbox row (`signed` or `sent`) older
 * than SWEEP_MIN_AGE_MS back to the payments queue, a bounded batch per round, walking the rows
 * in (created_at, id) order with a cursor so that a backlog of thousands is covered over a few
 * rounds, each one indexed (chain_transactions_unfinished) and cheap.
 *
 * This is what makes a committed payment settle whatever happened after its commit: a request
 * whose enqueue failed (Redis down) or whose process died, a job that failed or was removed. Job
 * ids dedupe, so a row already queued costs one look, and several workers sweeping at once are
 * safe.
 */
export async function sweepOutbox(
  deps: { db: Db; payments: Pick<PaymentsQueue, 'resubmit'> },
  after: SweepCursor | null,
  options: { minAgeMs?: number; batch?: number } = {},
): Promise<SweepResult> {
  const { minAgeMs = SWEEP_MIN_AGE_MS, batch = SWEEP_BATCH } = options;
  const rows = await unfinishedOutboxRows(deps.db, { after, minAgeMs, limit: batch });
  const outcomes = await Promise.allSettled(rows.map((row) => deps.payments.resubmit(row.id)));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  // Redis down: the whole round fails and the loop backs off; the cursor stays where it was.
  if (failed) throw failed.reason;
  const done = outcomes as PromiseFulfilledResult<Resubmitted>[];
  const last = rows.at(-1);
  return {
    seen: rows.length,
    resubmitted: done.filter((o) => o.value !== 'queued').length,
    next: rows.length === batch && last ? { createdAt: last.cursor_at, id: last.id } : null,
  };
}
