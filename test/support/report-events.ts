import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../src/adapters/postgres/db.js';
import { until } from './until.js';

/** The account's `report.succeeded` and `report.failed` events, as numbered in its log. */
export function reportEndings(db: Db, accountId: string) {
  return db
    .selectFrom('account_events')
    .select(['type', 'data'])
    .where('account_id', '=', accountId)
    .where('type', 'in', ['report.succeeded', 'report.failed'])
    .execute();
}

/**
 * Waits until a run's ending is numbered in the account's log, then a second more (a second ending,
 * staged by a repeated attempt, would be numbered by then), and answers the endings with what the
 * account still has staged (nothing, once the sequencer caught up).
 */
export async function settledReportEndings(db: Db, accountId: string) {
  await until(
    'report.succeeded numbered',
    () => reportEndings(db, accountId),
    (rows) => rows.length > 0,
    30_000,
  );
  await sleep(1_000);
  const staged = await db
    .selectFrom('event_staging')
    .select('id')
    .where('account_id', '=', accountId)
    .execute();
  return { endings: await reportEndings(db, accountId), staged };
}
