import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../src/adapters/postgres/db.js';

/**
 * Waits until the payments worker has taken every outbox row to an end ('confirmed' or 'failed').
 * A 201 answers once the cluster executed a payment; its credits become spendable at
 * confirmation, a slot later: balances are asserted after this.
 */
export async function paymentsSettled(db: Db, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await db
      .selectFrom('chain_transactions')
      .select(db.fn.countAll<string>().as('n'))
      .where('status', 'in', ['signed', 'sent'])
      .executeTakeFirstOrThrow();
    if (Number(open.n) === 0) return;
    if (Date.now() > deadline) throw new Error(`${open.n} payment(s) still unsettled after ${timeoutMs} ms`);
    await sleep(50);
  }
}
