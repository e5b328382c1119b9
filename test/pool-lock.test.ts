import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { withPoolLock } from '../src/app/swap/pool-lock.js';
import { AppError } from '../src/domain/errors.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;

beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  await env?.close();
});

/** A step that holds the pool until `open()` is called. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

const isBusy = (error: unknown) => error instanceof AppError && error.code === 'unavailable';

describe('the swap pool lock', () => {
  test('runs swaps of one pool one at a time, in arrival order', async () => {
    const order: string[] = [];
    let inside = 0;
    const swap = (name: string) =>
      withPoolLock(env.app.db, 'order', async () => {
        inside += 1;
        expect(inside).toBe(1);
        await new Promise((resolve) => setTimeout(resolve, 5));
        order.push(name);
        inside -= 1;
      });
    await Promise.all(['a', 'b', 'c', 'd'].map(swap));
    expect(order).toEqual(['a', 'b', 'c', 'd']);
  });

  test('refuses a swap at once when the queue of waiting swaps is full', async () => {
    const held = gate();
    const entered = gate();
    const holder = withPoolLock(
      env.app.db,
      'full',
      () => {
        entered.open();
        return held.opened;
      },
      { maxWaiting: 2 },
    );
    await entered.opened; // the holder holds the pool: from here on, swaps wait
    const waiters = [1, 2].map(() =>
      withPoolLock(env.app.db, 'full', () => Promise.resolve('ran'), { maxWaiting: 2 }),
    );
    const started = Date.now();
    const refused = await withPoolLock(env.app.db, 'full', () => Promise.resolve('ran'), {
      maxWaiting: 2,
    }).catch((error: unknown) => error);
    expect(isBusy(refused)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_000);
    held.open();
    await holder;
    // The two that were queued still run once the pool is free.
    expect(await Promise.all(waiters)).toEqual(['ran', 'ran']);
  });

  test('a swap that waits past its deadline answers 503 and never runs; the queue goes on', async () => {
    const held = gate();
    const holder = withPoolLock(env.app.db, 'slow', () => held.opened);
    let ran = false;
    const started = Date.now();
    const late = await withPoolLock(
      env.app.db,
      'slow',
      () => {
        ran = true;
        return Promise.resolve();
      },
      { waitMs: 200 },
    ).catch((error: unknown) => error);
    expect(isBusy(late)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(ran).toBe(false);
    held.open();
    await holder;
    await expect(withPoolLock(env.app.db, 'slow', () => Promise.resolve('next'))).resolves.toBe('next');
  });

  test('another process holding the pool (a Postgres session) bounds the wait too', async () => {
    // A second pool of connections stands in for another API process: same advisory lock.
    const other = await env.app.db.connection().execute(async (connection) => {
      await sql`SELECT pg_advisory_lock(hashtext(${'ledgerfeed:swap-pool:remote'}))`.execute(connection);
      try {
        return await withPoolLock(env.app.db, 'remote', () => Promise.resolve('ran'), { waitMs: 300 }).catch(
          (error: unknown) => error,
        );
      } finally {
        await sql`SELECT pg_advisory_unlock(hashtext(${'ledgerfeed:swap-pool:remote'}))`.execute(connection);
      }
    });
    expect(isBusy(other)).toBe(true);
    await expect(withPoolLock(env.app.db, 'remote', () => Promise.resolve('ran'))).resolves.toBe('ran');
  });
});
