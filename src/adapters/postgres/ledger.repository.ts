import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { AccountMoney } from '../../domain/accounts/account.js';
import { AppError } from '../../domain/errors.js';
import {
  assertBalanced,
  currencyOf,
  type Currency,
  type Leg,
  type LedgerAccountRef,
} from '../../domain/ledger/ledger.js';
import type { LedgerStore, MovementInput } from '../../domain/ledger/ledger.service.js';
import { formatNativeUnits } from '../../domain/money/native.js';
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
    money: async (accountId, currency = 'usdc') => {
      const row = await db
        .selectFrom('ledger_accounts')
        .select(['balance', 'pending', 'total_earned', 'total_spent'])
        .where('account_id', '=', accountId)
        .where('currency', '=', currency)
        .executeTakeFirst();
      return row
        ? {
            availableMicro: row.balance,
            pendingMicro: row.pending,
            totalEarnedMicro: row.total_earned,
            totalSpentMicro: row.total_spent,
          }
        : NO_MONEY;
    },
  };
}

const NO_MONEY: AccountMoney = {
  availableMicro: 0n,
  pendingMicro: 0n,
  totalEarnedMicro: 0n,
  totalSpentMicro: 0n,
};

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
  const accountIds = await ledgerAccountIds(
    trx,
    movement.legs.map((leg) => leg.account),
  );
  const legs = movement.legs.map((leg, k) => ({ ...leg, ledgerAccountId: accountIds[k]! }));

  // Only user rows hold a stored balance (they need the conditional debit). Platform accounts are
  // credited by nearly every movement: a row update each time would serialise every paid post on
  // the treasury row's lock, so their balance is the sum of their legs.
  const userChanges = legs
    .filter((leg) => leg.account.kind === 'user')
    .map((leg) => {
      const amount = leg.amountMicro;
      const toPending =
        (movement.pending === 'hold' && amount > 0n) || (movement.pending === 'unhold' && amount < 0n);
      return {
        id: leg.ledgerAccountId,
        balance: toPending ? 0n : amount,
        pending: toPending ? amount : 0n,
        spent: leg.counts === 'spent' ? -amount : 0n,
        earned: leg.counts === 'earned' ? amount : 0n,
      };
    });
  const changes = userChanges.length
    ? sql.join(
        userChanges.map(
          (c) =>
            sql`(${c.id}::uuid, ${c.balance}::bigint, ${c.pending}::bigint, ${c.spent}::bigint, ${c.earned}::bigint)`,
        ),
      )
    : sql`(NULL::uuid, 0::bigint, 0::bigint, 0::bigint, 0::bigint)`;
  const legRows = sql.join(
    legs.map((leg) => sql`(${leg.ledgerAccountId}::uuid, ${leg.amountMicro}::bigint, ${leg.counts})`),
  );
  // One statement, one round trip: lock the user rows in id order (concurrent movements touching
  // the same accounts never deadlock), apply every change only where it keeps the row at or above
  // zero (the conditional debit), and write the movement and its legs only if every change applied.
  // A refused change leaves the statement's other changes for the caller's rollback to undo.
  const { rows } = await sql<{ movement_id: string | null }>`
    WITH locked AS (
      SELECT id FROM ledger_accounts
       WHERE id IN (SELECT id FROM (VALUES ${changes}) AS c (id, balance, pending, spent, earned))
       ORDER BY id FOR UPDATE
    ), applied AS (
      UPDATE ledger_accounts a
         SET balance = a.balance + c.balance, pending = a.pending + c.pending,
             total_spent = a.total_spent + c.spent, total_earned = a.total_earned + c.earned
        FROM (VALUES ${changes}) AS c (id, balance, pending, spent, earned)
       WHERE a.id = c.id AND a.id IN (SELECT id FROM locked)
         AND a.balance + c.balance >= 0 AND a.pending + c.pending >= 0
      RETURNING a.id
    ), movement AS (
      INSERT INTO ledger_movements (kind, idempotency_key, reverses_id)
      SELECT ${movement.kind}, ${movement.idempotencyKey ?? null}, ${movement.reverses ?? null}::uuid
       WHERE (SELECT count(*) FROM applied) = ${userChanges.length}
      RETURNING id
    ), legs AS (
      INSERT INTO ledger_legs (movement_id, ledger_account_id, amount, counts)
      SELECT movement.id, l.account, l.amount, l.counts
        FROM movement, (VALUES ${legRows}) AS l (account, amount, counts)
    )
    SELECT (SELECT id FROM movement) AS movement_id`.execute(trx);
  const movementId = rows[0]?.movement_id;
  if (movementId) return { movementId, replayed: false };

  // Refused: name the first debit that did not find its money.
  for (const change of userChanges.filter((c) => c.balance < 0n || c.pending < 0n)) {
    const { balance, pending, currency } = await trx
      .selectFrom('ledger_accounts')
      .select(['balance', 'pending', 'currency'])
      .where('id', '=', change.id)
      .executeTakeFirstOrThrow();
    const required = -(change.balance + change.pending);
    const available = change.balance < 0n ? balance : pending;
    if (available >= required) continue;
    if (currency === 'native') {
      // The native variant of the 402: token base units as strings (a 9-decimal amount can pass
      // 2^53), under names that say the unit.
      throw new AppError(
        'insufficient_balance',
        `Insufficient native token balance: ${formatNativeUnits(available)} available, ${formatNativeUnits(required)} required`,
        { currency, balanceTokens: available.toString(), requiredTokens: required.toString() },
      );
    }
    throw new AppError(
      'insufficient_balance',
      `Insufficient balance: $${formatMicroUsd(available)} available, $${formatMicroUsd(required)} required`,
      { balanceMicro: available.toString(), requiredMicro: required.toString() },
    );
  }
  throw new Error(`ledger movement ${movement.kind} was refused, but no debit lacks money`);
}

/**
 * The ledger account id of every ref, in one statement when they all exist (the usual case): a
 * user's account in a currency is created on first use (a user's native account appears with
 * their first native movement), the platform kinds are seeded by migration, one per currency.
 */
async function ledgerAccountIds(
  trx: Transaction<Database>,
  refs: readonly LedgerAccountRef[],
): Promise<string[]> {
  const keyOf = (ref: LedgerAccountRef) =>
    `${ref.kind === 'user' ? `user:${ref.accountId}` : ref.kind}:${currencyOf(ref)}`;
  const userIds = [...new Set(refs.flatMap((ref) => (ref.kind === 'user' ? [ref.accountId] : [])))];
  const kinds = [...new Set(refs.flatMap((ref) => (ref.kind === 'user' ? [] : [ref.kind])))];
  const lookUp = async () => {
    // Every currency of the named users and kinds: at most twice the rows needed, one statement.
    const rows = await trx
      .selectFrom('ledger_accounts')
      .select(['id', 'kind', 'account_id', 'currency'])
      .where((eb) =>
        eb.or([
          ...(userIds.length > 0 ? [eb('account_id', 'in', userIds)] : []),
          ...(kinds.length > 0 ? [eb.and([eb('account_id', 'is', null), eb('kind', 'in', kinds)])] : []),
        ]),
      )
      .execute();
    return new Map(
      rows.map((row) => [`${row.account_id ? `user:${row.account_id}` : row.kind}:${row.currency}`, row.id]),
    );
  };
  let ids = await lookUp();
  const missingUsers = new Map<string, { accountId: string; currency: Currency }>();
  for (const ref of refs) {
    if (ref.kind === 'user' && !ids.has(keyOf(ref)))
      missingUsers.set(keyOf(ref), { accountId: ref.accountId, currency: currencyOf(ref) });
  }
  if (missingUsers.size > 0) {
    await trx
      .insertInto('ledger_accounts')
      .values(
        [...missingUsers.values()].map(({ accountId, currency }) => ({
          kind: 'user' as const,
          account_id: accountId,
          currency,
        })),
      )
      .onConflict((oc) => oc.columns(['account_id', 'currency']).doNothing())
      .execute();
    ids = await lookUp();
  }
  return refs.map((ref) => {
    const id = ids.get(keyOf(ref));
    if (!id) throw new Error(`no ledger account for ${keyOf(ref)}`);
    return id;
  });
}

/**
 * The statement that moves the held credits of some movements (`movementIds`: SQL yielding
 * movement ids) from `pending` to the spendable balance. Whoever runs it makes sure it runs once
 * per movement (see confirmOutboxPayments).
 */
export function releaseHeldCreditsSql(movementIds: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    UPDATE ledger_accounts a
       SET pending = a.pending - c.amount, balance = a.balance + c.amount
      FROM (SELECT ledger_account_id, sum(amount) AS amount FROM ledger_legs
             WHERE movement_id IN (${movementIds}) AND amount > 0 GROUP BY ledger_account_id) c
     WHERE a.id = c.ledger_account_id AND a.kind = 'user'`;
}

/** Releases one movement's held credits inside the caller's transaction. */
export async function releaseHeldCredits(trx: Transaction<Database>, movementId: string): Promise<void> {
  await releaseHeldCreditsSql(sql`${movementId}::uuid`).execute(trx);
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
      'ledger_accounts.currency',
    ])
    .where('ledger_legs.movement_id', '=', movementId)
    .orderBy('ledger_legs.id')
    .execute();
  // USDC refs are written without a currency, exactly as the write path builds them.
  const currency = (c: Currency) => (c === 'usdc' ? {} : { currency: c });
  return rows.map((row) => ({
    account:
      row.kind === 'user'
        ? { kind: 'user', accountId: row.account_id!, ...currency(row.currency) }
        : { kind: row.kind, ...currency(row.currency) },
    amountMicro: row.amount,
    counts: row.counts,
  }));
}
