import type { Db } from '../../adapters/postgres/db.js';
import {
  confirmOutboxPayments,
  markOutboxSent,
  type OutboxLanding,
} from '../../adapters/postgres/outbox.repository.js';

/**
 * The payments worker's outbox updates, gathered per turn of the event loop into one statement
 * each: the signature watcher settles every payment it found in one poll at once, so their
 * 'sent' (and later 'confirmed') updates arrive together and leave as one round trip.
 */
export interface OutboxWrites {
  markSent(row: OutboxLanding): Promise<void>;
  confirm(row: OutboxLanding): Promise<void>;
}

/** One batcher per connection pool, shared by every settlement the process runs on it. */
const perPool = new WeakMap<Db, OutboxWrites>();

export function outboxWritesFor(db: Db): OutboxWrites {
  let writes = perPool.get(db);
  if (!writes) {
    writes = {
      markSent: batched((rows) => markOutboxSent(db, rows)),
      confirm: batched((rows) => confirmOutboxPayments(db, rows)),
    };
    perPool.set(db, writes);
  }
  return writes;
}

/** Calls made in one turn go out together; each caller gets the shared statement's outcome. */
function batched<T>(write: (rows: T[]) => Promise<void>): (row: T) => Promise<void> {
  let rows: T[] | undefined;
  let done = Promise.resolve();
  return (row) => {
    if (!rows) {
      const batch: T[] = (rows = []);
      done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        rows = undefined;
        return write(batch);
      });
    }
    rows.push(row);
    return done;
  };
}
