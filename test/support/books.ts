import { sql } from 'kysely';
import type { Db } from '../../src/adapters/postgres/db.js';

/*
 * The books a burst of paid writes must close, shared by test/contention.test.ts and the chaos
 * run (bench/chaos.ts): what each account should hold after the writes a client was told
 * succeeded, and the ledger's own invariants. Amounts in micro-USD.
 */

/** What one acknowledged (2xx) paid write moved: its payer's debit and the credit it paid out. */
export interface Charge<M> {
  who: M;
  debitMicro: bigint;
  credit?: { to: M; micro: bigint };
}

/** Each member's balance from its funding and the charges acknowledged to the clients. */
export function expectedBalances<M>(
  funded: ReadonlyMap<M, bigint>,
  charges: Iterable<Charge<M>>,
): Map<M, bigint> {
  const expected = new Map(funded);
  for (const charge of charges) {
    expected.set(charge.who, (expected.get(charge.who) ?? 0n) - charge.debitMicro);
    if (charge.credit) {
      expected.set(charge.credit.to, (expected.get(charge.credit.to) ?? 0n) + charge.credit.micro);
    }
  }
  return expected;
}

/** Sum of every leg, and the movements whose legs do not sum to zero (per currency). */
export async function legBalance(db: Db): Promise<{ total: string; unbalanced: unknown[] }> {
  const { rows: total } = await sql<{ total: string }>`
    SELECT coalesce(sum(amount), 0)::text AS total FROM ledger_legs`.execute(db);
  const { rows: unbalanced } = await sql<{ movement_id: string; currency: string; total: string }>`
    SELECT l.movement_id, a.currency, sum(l.amount)::text AS total
      FROM ledger_legs l JOIN ledger_accounts a ON a.id = l.ledger_account_id
     GROUP BY l.movement_id, a.currency HAVING sum(l.amount) <> 0`.execute(db);
  return { total: total[0]?.total ?? 'none', unbalanced };
}

/** Every outbox transaction: its signature and where the payments worker left it. */
export function outboxRows(db: Db): Promise<Array<{ signature: string; status: string }>> {
  return db.selectFrom('chain_transactions').select(['signature', 'status']).execute();
}
