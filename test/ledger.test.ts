import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  createLedgerStore,
  movementLegs,
  recordMovement,
  releaseHeldCredits,
} from '../src/adapters/postgres/ledger.repository.js';
import { commitPaidWrite } from '../src/app/write-path/payment-transaction.js';
import { AppError } from '../src/domain/errors.js';
import { paidEngagementLegs, reversalLegs, type Leg } from '../src/domain/ledger/ledger.js';
import type { LedgerStore } from '../src/domain/ledger/ledger-store.port.js';
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
    { account: { kind: 'external' }, units: -micro, counts: 'none' },
    { account: { kind: 'user', accountId }, units: micro, counts: 'none' },
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

/**
 * The invariant every test ends with: all legs of all movements sum to zero, and every user's
 * stored balance plus held credits equals the sum of that user's legs (platform accounts keep no
 * stored balance: theirs is the sum of their legs).
 */
async function expectLedgerBalanced() {
  const { rows } = await sql<{
    total: string;
  }>`SELECT coalesce(sum(amount), 0)::text AS total FROM ledger_legs`.execute(env.app.db);
  expect(rows[0]?.total).toBe('0');
  const { rows: drifted } = await sql<{ id: string }>`
    SELECT a.id FROM ledger_accounts a
      LEFT JOIN ledger_legs l ON l.ledger_account_id = a.id
     WHERE a.kind = 'user'
     GROUP BY a.id, a.balance, a.pending
    HAVING a.balance + a.pending <> coalesce(sum(l.amount), 0)`.execute(env.app.db);
  expect(drifted).toEqual([]);
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
      pendingMicro: 0n,
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
      pendingMicro: 0n,
      totalEarnedMicro: 500_000n,
      totalSpentMicro: 0n,
    });
    await expectLedgerBalanced();
  });

  test('a held payment credits pending, not the balance; releasing or reversing it settles it exactly', async () => {
    const fan = await newAccount('fan_held');
    const author = await newAccount('author_held');
    await ledger.record(deposit(fan, 2_000_000n, 'deposit-held'));
    const record = () =>
      env.app.db
        .transaction()
        .execute((trx) =>
          recordMovement(trx, { kind: 'post', legs: paidEngagementLegs(fan, author), pending: 'hold' }),
        );
    const first = await record();
    expect(await ledger.money(author)).toMatchObject({ availableMicro: 0n, pendingMicro: 500_000n });
    // Held credits cannot be spent: the author's $0.50 is not in their wallet yet.
    await expect(
      ledger.record({ kind: 'post', legs: paidEngagementLegs(author, undefined, 500_000n) }),
    ).rejects.toMatchObject({ code: 'insufficient_balance' });

    await env.app.db.transaction().execute((trx) => releaseHeldCredits(trx, first.movementId));
    expect(await ledger.money(author)).toMatchObject({ availableMicro: 500_000n, pendingMicro: 0n });

    // A second held payment fails on chain: its reversal takes the credit back out of pending,
    // even though the author has meanwhile spent everything that was spendable.
    const second = await record();
    await ledger.record({ kind: 'post', legs: paidEngagementLegs(author, undefined, 500_000n) });
    expect(await ledger.money(author)).toMatchObject({ availableMicro: 0n, pendingMicro: 500_000n });
    await env.app.db.transaction().execute(async (trx) =>
      recordMovement(trx, {
        kind: 'reversal',
        legs: reversalLegs(await movementLegs(trx, second.movementId)),
        reverses: second.movementId,
        pending: 'unhold',
      }),
    );
    expect(await ledger.money(author)).toEqual({
      availableMicro: 0n,
      pendingMicro: 0n,
      totalEarnedMicro: 500_000n,
      totalSpentMicro: 500_000n,
    });
    expect(await ledger.money(fan)).toMatchObject({
      availableMicro: 1_000_000n,
      totalSpentMicro: 1_000_000n,
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
          .where('currency', '=', 'usdc')
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

  test('two legs on one user account are applied together: the debit, the credit and both totals', async () => {
    const netter = await newAccount('netter_1');
    await ledger.record(deposit(netter, 5_000_000n, 'deposit-netter'));
    const before = await ledger.money(netter);
    await ledger.record({
      kind: 'earn',
      legs: [
        { account: { kind: 'user', accountId: netter }, units: -3_000_000n, counts: 'spent' },
        { account: { kind: 'user', accountId: netter }, units: 1_000_000n, counts: 'earned' },
        { account: { kind: 'treasury' }, units: 2_000_000n, counts: 'none' },
      ],
    });
    const after = await ledger.money(netter);
    expect(after.availableMicro - before.availableMicro).toBe(-2_000_000n);
    expect(after.totalSpentMicro - before.totalSpentMicro).toBe(3_000_000n);
    expect(after.totalEarnedMicro - before.totalEarnedMicro).toBe(1_000_000n);
    // Checked against the locked row as a whole: -3 + 1 of the remaining 3 fits, -4 + 1 does not.
    await expect(
      ledger.record({
        kind: 'earn',
        legs: [
          { account: { kind: 'user', accountId: netter }, units: -5_000_000n, counts: 'spent' },
          { account: { kind: 'user', accountId: netter }, units: 1_000_000n, counts: 'earned' },
          { account: { kind: 'treasury' }, units: 4_000_000n, counts: 'none' },
        ],
      }),
    ).rejects.toMatchObject({ code: 'insufficient_balance' });
    expect(await ledger.money(netter)).toEqual(after);
    await expectLedgerBalanced();
  });

  test('a paid write is one statement: when its domain row fails, the movement, outbox row and event are not written', async () => {
    const writer = await newAccount('writer_1');
    await ledger.record(deposit(writer, 2_000_000n, 'deposit-writer'));
    const count = async (table: 'ledger_movements' | 'chain_transactions' | 'domain_events') =>
      Number(
        (
          await env.app.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await Promise.all([
      count('ledger_movements'),
      count('chain_transactions'),
      count('domain_events'),
    ]);
    const money = await ledger.money(writer);
    await expect(
      commitPaidWrite(env.app.db, {
        movement: { kind: 'post', legs: paidEngagementLegs(writer, undefined), pending: 'hold' },
        // A reply to a post that does not exist: the foreign key fails after the movement was recorded.
        row: (movementId) =>
          env.app.db
            .insertInto('posts')
            .values({
              author_id: writer,
              type: 'reply',
              content: 'to nowhere',
              parent_id: '00000000-0000-4000-8000-000000000000',
              movement_id: movementId,
            })
            .returning('created_at'),
        payment: {
          wire: Buffer.from([1]),
          signature: `never-sent-${Date.now()}`,
          blockhash: 'none',
          lastValidBlockHeight: 0,
        },
        event: { type: 'post.replied', actor_id: writer, amount_micro: -1_000_000n },
      }),
    ).rejects.toThrow(/foreign key/);
    expect(
      await Promise.all([count('ledger_movements'), count('chain_transactions'), count('domain_events')]),
    ).toEqual(before);
    expect(await ledger.money(writer)).toEqual(money);
    await expectLedgerBalanced();
  });
});
