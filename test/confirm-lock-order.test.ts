import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { recordMovement } from '../src/adapters/postgres/ledger.repository.js';
import { confirmOutboxPayments } from '../src/adapters/postgres/outbox.repository.js';
import type { Leg } from '../src/domain/ledger/ledger.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/*
 * A worker confirming a batch of payments releases their held credits while paid writes lock the
 * same ledger accounts. Both must lock in id order: the confirmation used to update its accounts in
 * hash order, and a write holding the lowest account while it went on to the others closed a cycle
 * that Postgres broke by failing one of them with "deadlock detected" (a 500 on the paid write).
 */

const ACCOUNTS = 12;
let env: TestEnv;

beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  await env?.close();
});

test('confirming held credits and a paid write locking the same accounts in id order never deadlock', async () => {
  const db = env.app.db;
  const accountIds: string[] = [];
  for (let i = 0; i < ACCOUNTS; i += 1) {
    const row = await db
      .insertInto('accounts')
      .values({ handle: `lockorder_${i}`, display_name: `lock order ${i}` })
      .returning('id')
      .executeTakeFirstOrThrow();
    accountIds.push(row.id);
  }
  // One movement holding $1 for each account, its outbox row executed on chain ('sent').
  const legs: Leg[] = [
    { account: { kind: 'external' }, units: -BigInt(ACCOUNTS) * 1_000_000n, counts: 'none' },
    ...accountIds.map((accountId): Leg => ({
      account: { kind: 'user', accountId },
      units: 1_000_000n,
      counts: 'none',
    })),
  ];
  const { movementId } = await db
    .transaction()
    .execute((trx) => recordMovement(trx, { kind: 'deposit', legs, pending: 'hold' }));
  const outbox = await db
    .insertInto('chain_transactions')
    .values({
      movement_id: movementId,
      signature: 'lock-order-signature',
      wire: Buffer.from([1]),
      blockhash: 'lock-order-blockhash',
      last_valid_block_height: 1n,
      status: 'sent',
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const ledgerIds = (
    await db
      .selectFrom('ledger_accounts')
      .select('id')
      .where('account_id', 'in', accountIds)
      .orderBy('id')
      .execute()
  ).map((row) => row.id);

  // A paid write's movement: the lowest account first, then (after the confirmation has started
  // and reached it) every other one, in id order as ledger_record_movement takes them.
  let confirmation: Promise<void> | undefined;
  const write = db.transaction().execute(async (trx) => {
    await sql`SELECT 1 FROM ledger_accounts WHERE id = ${ledgerIds[0]}::uuid FOR UPDATE`.execute(trx);
    confirmation = confirmOutboxPayments(db, [{ id: outbox.id, signature: 'lock-order-signature', slot: 7 }]);
    await sleep(300);
    await sql`SELECT 1 FROM ledger_accounts WHERE id = ANY(${ledgerIds}::uuid[]) ORDER BY id FOR UPDATE`.execute(
      trx,
    );
  });

  await expect(write).resolves.toBeUndefined();
  await expect(confirmation).resolves.toBeUndefined();
  const held = await db
    .selectFrom('ledger_accounts')
    .select(['balance', 'pending'])
    .where('id', 'in', ledgerIds)
    .execute();
  expect(held.map((row) => [String(row.balance), String(row.pending)])).toEqual(
    ledgerIds.map(() => ['1000000', '0']),
  );
});
