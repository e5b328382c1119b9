import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  createLedgerStore,
  movementLegs,
  recordMovement,
} from '../src/adapters/postgres/ledger.repository.js';
import { createTransactionHistoryStore } from '../src/adapters/postgres/transaction-history.repository.js';
import { AppError } from '../src/domain/errors.js';
import {
  assertBalanced,
  reversalLegs,
  UnbalancedMovementError,
  type Leg,
} from '../src/domain/ledger/ledger.js';
import type { LedgerStore } from '../src/domain/ledger/ledger-store.port.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let ledger: LedgerStore;
let alice: string;

const nativeDeposit = (accountId: string, units: bigint, key: string) => ({
  kind: 'deposit' as const,
  idempotencyKey: key,
  legs: [
    { account: { kind: 'external', currency: 'native' }, units: -units, counts: 'none' },
    { account: { kind: 'user', accountId, currency: 'native' }, units: units, counts: 'none' },
  ] satisfies Leg[],
});

beforeAll(async () => {
  env = await openTestEnv();
  ledger = createLedgerStore(env.app.db);
  const row = await env.app.db
    .insertInto('accounts')
    .values({ handle: 'native_alice', display_name: 'a' })
    .returning('id')
    .executeTakeFirstOrThrow();
  alice = row.id;
});
afterAll(async () => {
  await env?.close();
});

/** Legs sum to zero per currency, and every user row equals the sum of its legs. */
async function expectBalancedPerCurrency() {
  const { rows } = await sql<{ currency: string; total: string }>`
    SELECT a.currency, sum(l.amount)::text AS total
      FROM ledger_legs l JOIN ledger_accounts a ON a.id = l.ledger_account_id
     GROUP BY a.currency HAVING sum(l.amount) <> 0`.execute(env.app.db);
  expect(rows).toEqual([]);
  const { rows: drifted } = await sql<{ id: string }>`
    SELECT a.id FROM ledger_accounts a LEFT JOIN ledger_legs l ON l.ledger_account_id = a.id
     WHERE a.kind = 'user' GROUP BY a.id, a.balance, a.pending
    HAVING a.balance + a.pending <> coalesce(sum(l.amount), 0)`.execute(env.app.db);
  expect(drifted).toEqual([]);
}

describe('the native-token ledger', () => {
  test('the migration seeds one native platform account per kind beside the USDC ones', async () => {
    const rows = await env.app.db
      .selectFrom('ledger_accounts')
      .select(['kind', 'currency'])
      .where('account_id', 'is', null)
      .orderBy('currency')
      .orderBy('kind')
      .execute();
    expect(rows.filter((r) => r.currency === 'native').map((r) => r.kind)).toEqual([
      'creator_fund',
      'external',
      'swap_pool',
      'treasury',
    ]);
    expect(rows.filter((r) => r.currency === 'usdc')).toHaveLength(5);
  });

  test("a native movement creates the user's native account, separate from the USDC one", async () => {
    await ledger.record({
      kind: 'deposit',
      idempotencyKey: 'usdc-1',
      legs: [
        { account: { kind: 'external' }, units: -5_000_000n, counts: 'none' },
        { account: { kind: 'user', accountId: alice }, units: 5_000_000n, counts: 'none' },
      ],
    });
    await ledger.record(nativeDeposit(alice, 7_000_000_000n, 'native-1'));
    expect((await ledger.money(alice)).availableMicro).toBe(5_000_000n);
    expect((await ledger.money(alice, 'usdc')).availableMicro).toBe(5_000_000n);
    expect((await ledger.money(alice, 'native')).availableMicro).toBe(7_000_000_000n);
    const accounts = await env.app.db
      .selectFrom('ledger_accounts')
      .select('currency')
      .where('account_id', '=', alice)
      .orderBy('currency', 'desc')
      .execute();
    expect(accounts.map((a) => a.currency)).toEqual(['usdc', 'native']);
    await expectBalancedPerCurrency();
  });

  test('a movement mixing currencies must balance in each; the database refuses one balanced only across them', async () => {
    const crossOnly: Leg[] = [
      { account: { kind: 'user', accountId: alice, currency: 'native' }, units: -5n, counts: 'none' },
      { account: { kind: 'user', accountId: alice }, units: 5n, counts: 'none' },
    ];
    expect(() => assertBalanced(crossOnly)).toThrow(UnbalancedMovementError);
    // Past the domain check, the deferred trigger refuses it at commit.
    const ids = await env.app.db
      .selectFrom('ledger_accounts')
      .select(['id', 'currency'])
      .where('account_id', '=', alice)
      .execute();
    await expect(
      env.app.db.transaction().execute(async (trx) => {
        const movement = await trx
          .insertInto('ledger_movements')
          .values({ kind: 'swap' })
          .returning('id')
          .executeTakeFirstOrThrow();
        await trx
          .insertInto('ledger_legs')
          .values(
            ids.map((a) => ({
              movement_id: movement.id,
              ledger_account_id: a.id,
              amount: a.currency === 'native' ? -5n : 5n,
            })),
          )
          .execute();
      }),
    ).rejects.toThrow(/does not balance/);
    await expectBalancedPerCurrency();
  });

  test('a native debit beyond the balance is refused in token units, moving nothing', async () => {
    const before = await ledger.money(alice, 'native');
    const error = await ledger
      .record({
        kind: 'swap',
        legs: [
          {
            account: { kind: 'user', accountId: alice, currency: 'native' },
            units: -(before.availableMicro + 1n),
            counts: 'none',
          },
          {
            account: { kind: 'swap_pool', currency: 'native' },
            units: before.availableMicro + 1n,
            counts: 'none',
          },
        ],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('insufficient_balance');
    expect((error as AppError).details).toEqual({
      currency: 'native',
      balanceTokens: before.availableMicro.toString(),
      requiredTokens: (before.availableMicro + 1n).toString(),
    });
    expect(await ledger.money(alice, 'native')).toEqual(before);
  });

  test('a reversal read back from the legs keeps each leg in its currency', async () => {
    const legs: Leg[] = [
      {
        account: { kind: 'user', accountId: alice, currency: 'native' },
        units: -1_000n,
        counts: 'none',
      },
      { account: { kind: 'swap_pool', currency: 'native' }, units: 1_000n, counts: 'none' },
      { account: { kind: 'swap_pool' }, units: -3n, counts: 'none' },
      { account: { kind: 'user', accountId: alice }, units: 3n, counts: 'none' },
    ];
    const { movementId } = await env.app.db
      .transaction()
      .execute((trx) => recordMovement(trx, { kind: 'swap', legs, pending: 'hold' }));
    const stored = await movementLegs(env.app.db, movementId);
    expect(stored).toEqual(legs);
    await env.app.db.transaction().execute((trx) =>
      recordMovement(trx, {
        kind: 'reversal',
        legs: reversalLegs(stored),
        reverses: movementId,
        pending: 'unhold',
      }),
    );
    expect((await ledger.money(alice, 'native')).availableMicro).toBe(7_000_000_000n);
    expect(await ledger.money(alice)).toMatchObject({ availableMicro: 5_000_000n, pendingMicro: 0n });
    await expectBalancedPerCurrency();
  });

  test('the history is in dollars: native legs are not summed into it', async () => {
    const rows = await createTransactionHistoryStore(env.app.db).page(alice, { limit: 50 });
    // usdc deposit, the swap (+3 micro-USD) and its reversal (-3): the native deposit is not there.
    expect(rows.map((r) => [r.kind, r.amountMicro]).sort()).toEqual(
      [
        ['deposit', 5_000_000n],
        ['reversal', -3n],
        ['swap', 3n],
      ].sort(),
    );
  });
});
