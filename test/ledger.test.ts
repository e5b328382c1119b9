import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createLedgerStore } from '../src/adapters/postgres/ledger.repository.js';
import { AppError } from '../src/domain/errors.js';
import { paidEngagementLegs, type Leg } from '../src/domain/ledger/ledger.js';
import type { LedgerStore } from '../src/domain/ledger/ledger.service.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let ledger: LedgerStore;
let payer: string;
let creator: string;

const deposit = (
  accountId: string,
  micro: bigint,
  key: string,
): { kind: 'deposit'; legs: Leg[]; idempotencyKey: string } => ({
  kind: 'deposit',
  idempotencyKey: key,
  legs: [
    { account: { kind: 'external' }, amountMicro: -micro, counts: 'none' },
    { account: { kind: 'user', accountId }, amountMicro: micro, counts: 'none' },
  ],
});

async function newAccount(handle: string): Promise<string> {
  const row = await env.app.db
    .insertInto('accounts')
    .values({ handle, display_name: handle })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

beforeAll(async () => {
  env = await openTestEnv();
  ledger = createLedgerStore(env.app.db);
  payer = await newAccount('payer_1');
  creator = await newAccount('creator_1');
});
afterAll(async () => {
  await env?.close();
});

/** The invariant every test ends with: all legs of all movements sum to zero. */
async function expectLedgerBalanced() {
  const { rows } = await sql<{
    total: string;
  }>`SELECT coalesce(sum(amount), 0)::text AS total FROM ledger_legs`.execute(env.app.db);
  expect(rows[0]?.total).toBe('0');
  const { rows: accounts } = await sql<{
    total: string;
  }>`SELECT coalesce(sum(balance), 0)::text AS total FROM ledger_accounts`.execute(env.app.db);
  expect(accounts[0]?.total).toBe('0');
}

describe('the ledger', () => {
  test('50 concurrent $1 posts from an account holding $10: exactly 10 succeed, 40 are insufficient_balance', async () => {
    await ledger.record(deposit(payer, 10_000_000n, 'deposit-1'));
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, () =>
        ledger.record({ kind: 'post', legs: paidEngagementLegs(payer, undefined) }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(40);
    for (const r of refused) {
      expect(r.reason).toBeInstanceOf(AppError);
      expect((r.reason as AppError).code).toBe('insufficient_balance');
    }
    expect(await ledger.money(payer)).toEqual({
      availableMicro: 0n,
      totalEarnedMicro: 0n,
      totalSpentMicro: 10_000_000n,
    });
    await expectLedgerBalanced();
  });

  test('a reply pays the parent author half, counted as earned', async () => {
    await ledger.record(deposit(payer, 1_000_000n, 'deposit-2'));
    await ledger.record({ kind: 'post', legs: paidEngagementLegs(payer, creator) });
    expect(await ledger.money(creator)).toEqual({
      availableMicro: 500_000n,
      totalEarnedMicro: 500_000n,
      totalSpentMicro: 0n,
    });
    await expectLedgerBalanced();
  });

  test('the same idempotency key moves money once, even when both arrive at once', async () => {
    const [a, b] = await Promise.all([
      ledger.record(deposit(payer, 2_000_000n, 'sig-abc')),
      ledger.record(deposit(payer, 2_000_000n, 'sig-abc')),
    ]);
    expect(a.movementId).toBe(b.movementId);
    expect([a.replayed, b.replayed].sort()).toEqual([false, true]);
    expect((await ledger.money(payer)).availableMicro).toBe(2_000_000n);
    await expectLedgerBalanced();
  });

  test('the database itself refuses an unbalanced movement and a negative user balance', async () => {
    await expect(
      env.app.db.transaction().execute(async (trx) => {
        const movement = await trx
          .insertInto('ledger_movements')
          .values({ kind: 'earn' })
          .returning('id')
          .executeTakeFirstOrThrow();
        const treasury = await trx
          .selectFrom('ledger_accounts')
          .select('id')
          .where('kind', '=', 'treasury')
          .executeTakeFirstOrThrow();
        await trx
          .insertInto('ledger_legs')
          .values({ movement_id: movement.id, ledger_account_id: treasury.id, amount: 5n })
          .execute();
      }),
    ).rejects.toThrow(/does not balance/);
    await expect(
      sql`UPDATE ledger_accounts SET balance = -1 WHERE account_id = ${payer}`.execute(env.app.db),
    ).rejects.toThrow(/ledger_accounts_non_negative/);
    await expectLedgerBalanced();
  });
});
