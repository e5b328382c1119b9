import { sql } from 'kysely';
import type { Db } from '../../adapters/postgres/db.js';
import { AppError } from '../../domain/errors.js';

/** How long a swap waits for its turn on the pool before answering 503. */
export const POOL_LOCK_WAIT_MS = 30_000;

/** In-process queue per pool: at most one swap of this process waits on Postgres at a time. */
const localTurns = new Map<string, Promise<unknown>>();

/**
 * Runs `step` while holding the pool's lock, so the swaps on one pool run one after another across
 * every API process. Two layers: an in-process promise chain (swaps of one process queue in memory
 * and do not each pin a pooled connection while they wait), then a Postgres session advisory lock
 * on one pinned connection (processes exclude each other; a crashed process's session ends and
 * its lock with it). Waiting longer than POOL_LOCK_WAIT_MS is 503 `unavailable`.
 */
export async function withPoolLock<T>(db: Db, pool: string, step: () => Promise<T>): Promise<T> {
  const previous = localTurns.get(pool) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const turn = previous.then(() => mine);
  localTurns.set(pool, turn);
  try {
    await previous;
    return await db.connection().execute(async (connection) => {
      const key = sql`hashtext(${`ledgerfeed:swap-pool:${pool}`})`;
      try {
        await sql`SET lock_timeout = ${sql.lit(`${POOL_LOCK_WAIT_MS}ms`)}`.execute(connection);
        await sql`SELECT pg_advisory_lock(${key})`.execute(connection);
      } catch (error) {
        if ((error as { code?: string }).code === '55P03') {
          throw new AppError('unavailable', 'The swap pool is busy; try again shortly');
        }
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
  } finally {
    release();
    if (localTurns.get(pool) === turn) localTurns.delete(pool);
  }
}
