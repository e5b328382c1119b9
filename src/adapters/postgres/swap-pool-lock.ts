import { sql } from 'kysely';
import type { Db } from './db.js';

/** Postgres's lock_not_available: `lock_timeout` ran out. */
const LOCK_NOT_AVAILABLE = '55P03';

export interface SwapPoolLockWait {
  /** When the wait gives up (epoch ms): `lock_timeout` is set to what is left once a connection is held. */
  deadline: number;
  /** The error thrown when the lock is not had by `deadline`. */
  busy: () => Error;
}

/**
 * Runs `step` while this process holds the session advisory lock of swap pool `pool`, on one
 * pinned connection: processes exclude each other, and a crashed process's session ends and its
 * lock with it. The connection stays pinned until `step` settles; `step` runs its own queries on
 * other connections.
 */
export async function withSwapPoolLock<T>(
  db: Db,
  pool: string,
  wait: SwapPoolLockWait,
  step: () => Promise<T>,
): Promise<T> {
  return db.connection().execute(async (connection) => {
    const key = sql`hashtext(${`ledgerfeed:swap-pool:${pool}`})`;
    // At least 1 ms: a lock_timeout of 0 would wait for ever.
    const left = Math.max(1, wait.deadline - Date.now());
    try {
      await sql`SET lock_timeout = ${sql.lit(`${left}ms`)}`.execute(connection);
      await sql`SELECT pg_advisory_lock(${key})`.execute(connection);
    } catch (error) {
      if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) throw wait.busy();
      throw error;
    } finally {
      await sql`RESET lock_timeout`.execute(connection);
    }
    try {
      return await step();
    } finally {
      await sql`SELECT pg_advisory_unlock(${key})`.execute(connection);
    }
  });
}
