import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../src/adapters/postgres/db.js';

/**
 * Waits until the payments worker has taken every outbox row to an end ('confirmed' or 'failed').
 * A 201 answers once the cluster executed a payment; its credits become spendable at
 * confirmation, a slot later: balances are asserted after this.
 */
export async function paymentsSettled(db: Db, timeoutMs = 20_000): Promise<void> {
  const open = await waitForPayments(db, timeoutMs, 50);
  if (open > 0) throw new Error(`${open} payment(s) still unsettled after ${timeoutMs} ms`);
}

/** Polls until no outbox row is 'signed' or 'sent'; resolves to how many were left at the deadline. */
export async function waitForPayments(db: Db, timeoutMs: number, pollMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await db
      .selectFrom('chain_transactions')
      .select(db.fn.countAll<string>().as('n'))
      .where('status', 'in', ['signed', 'sent'])
      .executeTakeFirstOrThrow();
    if (Number(open.n) === 0 || Date.now() > deadline) return Number(open.n);
    await sleep(pollMs);
  }
}
