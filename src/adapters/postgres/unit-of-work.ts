import type { Db } from './db.js';
import type { Tx } from './tx.js';

/**
 * Runs `work` in one transaction: everything it writes through `tx` commits together, or (when it
 * throws) nothing does. The use case that owns the unit of work opens it and passes `tx` down.
 */
export async function inTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction().execute(work);
}
