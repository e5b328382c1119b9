import type { Db } from '../../adapters/postgres/db.js';
import type { OutboxRow } from '../../adapters/postgres/outbox-reads.repository.js';
import {
  confirmOutboxPayments,
  markOutboxSent,
  outboxRows,
  type OutboxLanding,
} from '../../adapters/postgres/outbox.repository.js';

/**
 * The payments worker's outbox statements, gathered per turn of the event loop into one statement
 * each: the signature watcher settles every payment it found in one poll at once, so their
 * 'sent' (and later 'confirmed') updates arrive together and leave as one round trip; jobs the
 * queue hands over together read their rows together.
 */
export interface OutboxWrites {
  /** The row, read fresh (throws when it does not exist). */
  read(id: string): Promise<OutboxRow>;
  markSent(row: OutboxLanding): Promise<void>;
  confirm(row: OutboxLanding): Promise<void>;
}

/** One batcher per connection pool, shared by every settlement the process runs on it. */
const perPool = new WeakMap<Db, OutboxWrites>();

export function outboxWritesFor(db: Db): OutboxWrites {
  let writes = perPool.get(db);
  if (!writes) {
    writes = {
      read: batched(async (ids) => {
        const rows = await outboxRows(db, ids);
        return ids.map((id) => rows.get(id) ?? new Error(`no outbox row ${id}`));
      }),
      markSent: batched(async (rows) => {
        await markOutboxSent(db, rows);
        return rows.map(() => undefined);
      }),
      confirm: batched(async (rows) => {
        await confirmOutboxPayments(db, rows);
        return rows.map(() => undefined);
      }),
    };
    perPool.set(db, writes);
  }
  return writes;
}

/**
 * Calls made in one turn go out together; each caller gets its own item's result (an Error in its
 * place rejects that caller only) or the shared statement's failure.
 */
function batched<T, R>(run: (items: T[]) => Promise<Array<R | Error>>): (item: T) => Promise<R> {
  let items: T[] | undefined;
  let results: Promise<Array<R | Error>> = Promise.resolve([]);
  return async (item) => {
    if (!items) {
      const batch: T[] = (items = []);
      results = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        items = undefined;
        return run(batch);
      });
    }
    const index = items.push(item) - 1;
    const result = (await results)[index]!;
    if (result instanceof Error) throw result;
    return result;
  };
}
