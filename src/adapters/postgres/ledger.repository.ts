import { sql, type Transaction } from 'kysely';
import type { AccountMoney } from '../../domain/accounts/account.js';
import { AppError } from '../../domain/errors.js';
import { assertBalanced, type Leg, type LedgerAccountRef } from '../../domain/ledger/ledger.js';
import type { LedgerStore, MovementInput } from '../../domain/ledger/ledger.service.js';
import { formatMicroUsd } from '../../domain/money/usd.js';
import type { Database } from './database.js';
import type { Db } from './db.js';

const UNIQUE_VIOLATION = '23505';

export function createLedgerStore(db: Db): LedgerStore {
  return {
    record: async (movement) => {
      assertBalanced(movement.legs);
      try {
        return await db.transaction().execute((trx) => recordMovement(trx, movement));
      } catch (error) {
        const pgError = error as { code?: string; constraint?: string };
        if (
          movement.idempotencyKey &&
          pgError.code === UNIQUE_VIOLATION &&
          pgError.constraint?.includes('idempotency')
        ) {
          // A concurrent twin won the race: answer with its movement.
          const existing = await db
            .selectFrom('ledger_movements')
            .select('id')
            .where('idempotency_key', '=', movement.idempotencyKey)
            .executeTakeFirstOrThrow();
          return { movementId: existing.id, replayed: true };
        }
        throw error;
      }
    },
    money: async (accountId) => {
      const row = await db
        .selectFrom('ledger_accounts')
        .select(['balance', 'total_earned', 'total_spent'])
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      return row
        ? {
            availableMicro: row.balance,
            totalEarnedMicro: row.total_earned,
            totalSpentMicro: row.total_spent,
          }
        : NO_MONEY;
    },
  };
}

const NO_MONEY: AccountMoney = { availableMicro: 0n, totalEarnedMicro: 0n, totalSpentMicro: 0n };

/**
 * Writes one movement inside the caller's transaction (the unit of work that also writes the
 * domain row and the outbox entry). Legs are applied in ledger-account order so concurrent
 * movements touching the same accounts always lock them in the same order (no deadlocks).
 */
export async function recordMovement(
  trx: Transaction<Database>,
  movement: MovementInput,
): Promise<{ movementId: string; replayed: boolean }> {
  assertBalanced(movement.legs);
  if (movement.idempotencyKey) {
    const existing = await trx
      .selectFrom('ledger_movements')
      .select('id')
      .where('idempotency_key', '=', movement.idempotencyKey)
      .executeTakeFirst();
    if (existing) return { movementId: existing.id, replayed: true };
  }
  const legs = await Promise.all(
    movement.legs.map(async (leg) => ({ ...leg, ledgerAccountId: await ledgerAccountId(trx, leg.account) })),
  );
  const inserted = await trx
    .insertInto('ledger_movements')
    .values({
      kind: movement.kind,
      idempotency_key: movement.idempotencyKey ?? null,
      reverses_id: movement.reverses ?? null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();

  for (const leg of [...legs].sort((a, b) => a.ledgerAccountId.localeCompare(b.ledgerAccountId))) {
    const amount = leg.amountMicro;
    const spent = leg.counts === 'spent' ? -amount : 0n;
    const earned = leg.counts === 'earned' ? amount : 0n;
    // The debit is one conditional UPDATE: it either finds the money or changes nothing.
    const updated = await trx
      .updateTable('ledger_accounts')
      .set({
        balance: sql`balance + ${amount}`,
        total_spent: sql`total_spent + ${spent}`,
        total_earned: sql`total_earned + ${earned}`,
      })
      .where('id', '=', leg.ledgerAccountId)
      .where((eb) =>
        amount < 0n && leg.account.kind !== 'external' ? eb('balance', '>=', -amount) : eb.lit(true),
      )
      .returning('balance')
      .executeTakeFirst();
    if (!updated) {
      const { balance } = await trx
        .selectFrom('ledger_accounts')
        .select('balance')
        .where('id', '=', leg.ledgerAccountId)
        .executeTakeFirstOrThrow();
      throw new AppError(
        'insufficient_balance',
        `Insufficient balance: $${formatMicroUsd(balance)} available, $${formatMicroUsd(-amount)} required`,
        { balanceMicro: balance.toString(), requiredMicro: (-amount).toString() },
      );
    }
  }
  await trx
    .insertInto('ledger_legs')
    .values(
      legs.map((leg) => ({
        movement_id: inserted.id,
        ledger_account_id: leg.ledgerAccountId,
        amount: leg.amountMicro,
        counts: leg.counts,
      })),
    )
    .execute();
  return { movementId: inserted.id, replayed: false };
}

/** The ledger account of a user (created on first use) or of a platform kind (seeded by migration). */
async function ledgerAccountId(trx: Transaction<Database>, ref: LedgerAccountRef): Promise<string> {
  if (ref.kind !== 'user') {
    const row = await trx
      .selectFrom('ledger_accounts')
      .select('id')
      .where('kind', '=', ref.kind)
      .where('account_id', 'is', null)
      .executeTakeFirstOrThrow();
    return row.id;
  }
  await trx
    .insertInto('ledger_accounts')
    .values({ kind: 'user', account_id: ref.accountId })
    .onConflict((oc) => oc.column('account_id').doNothing())
    .execute();
  const row = await trx
    .selectFrom('ledger_accounts')
    .select('id')
    .where('account_id', '=', ref.accountId)
    .executeTakeFirstOrThrow();
  return row.id;
}

/** The legs of a recorded movement, as the domain knows them (for its reversal). */
export async function movementLegs(trx: Transaction<Database> | Db, movementId: string): Promise<Leg[]> {
  const rows = await trx
    .selectFrom('ledger_legs')
    .innerJoin('ledger_accounts', 'ledger_accounts.id', 'ledger_legs.ledger_account_id')
    .select([
      'ledger_legs.amount',
      'ledger_legs.counts',
      'ledger_accounts.kind',
      'ledger_accounts.account_id',
    ])
    .where('ledger_legs.movement_id', '=', movementId)
    .orderBy('ledger_legs.id')
    .execute();
  return rows.map((row) => ({
    account: row.kind === 'user' ? { kind: 'user', accountId: row.account_id! } : { kind: row.kind },
    amountMicro: row.amount,
    counts: row.counts,
  }));
}
