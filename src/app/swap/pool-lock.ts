import type { Db } from '../../adapters/postgres/db.js';
import { withSwapPoolLock } from '../../adapters/postgres/swap-pool-lock.js';
import { AppError } from '../../domain/errors.js';

/** How long a swap waits for its turn on the pool (in this process and across processes) before 503. */
export const POOL_LOCK_WAIT_MS = 30_000;
/**
 * How many swaps of one process may wait for one pool at once; one more is refused at once. A
 * swap holds the pool for a few milliseconds to a second (it waits for its transaction to
 * execute), so 64 waiting is already tens of seconds of queue: past that a caller learns "busy"
 * now rather than after POOL_LOCK_WAIT_MS, and a flood cannot pile up promises without bound.
 */
export const POOL_LOCK_MAX_WAITING = 64;

export interface PoolLockOptions {
  /** @defaultValue POOL_LOCK_WAIT_MS */
  waitMs?: number;
  /** @defaultValue POOL_LOCK_MAX_WAITING */
  maxWaiting?: number;
}

/** The in-process queue of one pool: the promise the next swap waits on, and how many wait. */
interface LocalQueue {
  tail: Promise<void>;
  waiting: number;
}
const localQueues = new Map<string, LocalQueue>();

const busy = () => new AppError('unavailable', 'The swap pool is busy; try again shortly');

/**
 * Runs `step` while holding the pool's lock, so the swaps on one pool run one after another across
 * every API process. Two layers: an in-process queue (swaps of one process wait in memory and do
 * not each pin a pooled connection while they wait), then a Postgres session advisory lock on one
 * pinned connection (processes exclude each other; a crashed process's session ends and its lock
 * with it). The queue is bounded (POOL_LOCK_MAX_WAITING) and so is the whole wait, both layers
 * together (POOL_LOCK_WAIT_MS): past either, 503 `unavailable`, and nothing was moved.
 */
export async function withPoolLock<T>(
  db: Db,
  pool: string,
  step: () => Promise<T>,
  options: PoolLockOptions = {},
): Promise<T> {
  const waitMs = options.waitMs ?? POOL_LOCK_WAIT_MS;
  const queue = localQueues.get(pool) ?? { tail: Promise.resolve(), waiting: 0 };
  if (queue.waiting >= (options.maxWaiting ?? POOL_LOCK_MAX_WAITING)) throw busy();
  localQueues.set(pool, queue);

  const deadline = Date.now() + waitMs;
  const previous = queue.tail;
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  // The next swap waits for this one and for everything before it, even if this one gives up
  // early (its release then only stops it from adding to the wait).
  const turn = previous.then(() => mine);
  queue.tail = turn;
  queue.waiting += 1;
  let waiting = true;
  const stopWaiting = () => {
    if (waiting) queue.waiting -= 1;
    waiting = false;
  };
  try {
    if (!(await settlesWithin(previous, waitMs))) throw busy();
    stopWaiting();
    return await withSwapPoolLock(db, pool, { deadline, busy }, step);
  } finally {
    stopWaiting();
    release();
    if (queue.tail === turn) localQueues.delete(pool);
  }
}

/** True when `promise` settles within `ms`; the timer never outlives the wait. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
