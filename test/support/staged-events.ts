import { setTimeout as sleep } from 'node:timers/promises';
import type { Insertable } from 'kysely';
import type { EventStagingTable } from '../../src/adapters/postgres/database.js';
import type { Db } from '../../src/adapters/postgres/db.js';
import { sequenceStagedEvents } from '../../src/adapters/postgres/event-log.repository.js';

export type StagedEventRow = Insertable<EventStagingTable>;

/** `count` events of `type` for each account in turn, as a like stages them (`p0`, `p1`, ... liked by a fan). */
export function likes(
  accountIds: string | readonly string[],
  count: number,
  type = 'post.liked',
): StagedEventRow[] {
  return (typeof accountIds === 'string' ? [accountIds] : accountIds).flatMap((accountId) =>
    Array.from({ length: count }, (_, n) => ({
      account_id: accountId,
      type,
      data: JSON.stringify({ post_id: `p${n}`, by: 'fan' }),
      dedupe_key: null,
    })),
  );
}

/** `rows` staged as a change stages them; a sequencer (the worker's, or emitEvents') numbers them. Their ids. */
export async function stageEvents(db: Db, rows: readonly StagedEventRow[]) {
  const staged = await db.insertInto('event_staging').values(rows).returning('id').execute();
  return staged.map((row) => row.id);
}

/**
 * `rows` staged and numbered into their accounts' logs, as a change and the sequencer do; their
 * staged ids once every one of them is numbered. `batch`: how many staged events one sequencer
 * call may move.
 */
export async function emitEvents(db: Db, rows: readonly StagedEventRow[], { batch = 1_000 } = {}) {
  const ids = await stageEvents(db, rows);
  // Until these rows are numbered: a concurrent test's turn may hold the sequencer's lock (its
  // call then moves nothing), and that turn may have started before these rows committed.
  for (;;) {
    await sequenceStagedEvents(db, batch);
    const left = await db.selectFrom('event_staging').select('id').where('id', 'in', ids).execute();
    if (left.length === 0) return ids;
    await sleep(5);
  }
}
