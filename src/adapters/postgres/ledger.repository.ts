import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { AccountMoney } from '../../domain/accounts/account.js';
import type { AppError } from '../../domain/errors.js';
import { assertBalanced, currencyOf, type Currency, type Leg } from '../../domain/ledger/ledger.js';
import type { LedgerStore, MovementInput } from '../../domain/ledger/ledger-store.port.js';
import { insufficientBalance } from '../../domain/ledger/insufficient-balance.js';
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
 * The SQL call that records one movement (`ledger_record_movement`, migration e): a row source
 * yielding `movement_id` and `replayed`, to run alone (recordMovement) or as the first part of a
 * statement that also writes the domain row and the outbox entry (commitPaidWrite). The function
 * creates a user's ledger account on first use, locks the user rows in id order (no deadlocks),
 * refuses a debit beyond the locked balance (SQLSTATE LF402, see ledgerRefusal) and writes the
 * movement and its legs. Here is decided how each leg moves `balance` and `pending`.
 */
export function movementCall(
  movement: MovementInput,
): RawBuilder<{ movement_id: string; replayed: boolean }> {
  assertBalanced(movement.legs);
  const legs = movement.legs.map((leg) => {
    const amount = leg.units;
    const user = leg.account.kind === 'user';
    const toPending =
      (movement.pending === 'hold' && amount > 0n) || (movement.pending === 'unhold' && amount < 0n);
    return {
      ref: leg.account.kind,
      accountId: leg.account.kind === 'user' ? leg.account.accountId : null,
      currency: currencyOf(leg.account),
      amount,
      counts: leg.counts,
      balance: user && !toPending ? amount : 0n,
      pending: user && toPending ? amount : 0n,
      spent: user && leg.counts === 'spent' ? -amount : 0n,
      earned: user && leg.counts === 'earned' ? amount : 0n,
    };
  });
  // bigint arrays go as text: node-postgres writes a JS array of strings as a Postgres array.
  const bigints = (pick: (leg: (typeof legs)[number]) => bigint) => legs.map((leg) => pick(leg).toString());
  return sql`ledger_record_movement(
    ${movement.kind}, ${movement.idempotencyKey ?? null}, ${movement.reverses ?? null}::uuid,
    ${legs.map((leg) => leg.ref)}::text[], ${legs.map((leg) => leg.accountId)}::uuid[],
    ${legs.map((leg) => leg.currency)}::text[], ${bigints((leg) => leg.amount)}::bigint[],
    ${legs.map((leg) => leg.counts)}::text[], ${bigints((leg) => leg.balance)}::bigint[],
    ${bigints((leg) => leg.pending)}::bigint[], ${bigints((leg) => leg.spent)}::bigint[],
    ${bigints((leg) => leg.earned)}::bigint[])`;
}

/** SQLSTATE of ledger_record_movement's refusal: a debit found less money than it takes. */
const INSUFFICIENT_BALANCE = 'LF402';

/**
 * The 402 a refused movement answers (USDC in micro-USD, the native token in base units), or
 * undefined when the error is anything else. Callers rethrow it in place of the database error.
 */
export function ledgerRefusal(error: unknown): AppError | undefined {
  const pgError = error as { code?: string; detail?: string };
  if (pgError.code !== INSUFFICIENT_BALANCE || !pgError.detail) return undefined;
  const detail = JSON.parse(pgError.detail) as { currency: Currency; available: string; required: string };
  return insufficientBalance(detail.currency, BigInt(detail.available), BigInt(detail.required));
}

/**
 * Writes one movement inside the caller's transaction (the unit of work that also writes the
 * domain row and the outbox entry), in one round trip. A refused debit throws the 402 AppError and
 * leaves the caller's transaction to roll back.
 */
export async function recordMovement(
  trx: Transaction<Database>,
  movement: MovementInput,
): Promise<{ movementId: string; replayed: boolean }> {
  try {
    const { rows } = await sql<{
      movement_id: string;
      replayed: boolean;
    }>`SELECT movement_id, replayed FROM ${movementCall(movement)}`.execute(trx);
    return { movementId: rows[0]!.movement_id, replayed: rows[0]!.replayed };
  } catch (error) {
    throw ledgerRefusal(error) ?? error;
  }
}

/**
 * The statement that moves the held credits of some movements (`movementIds`: SQL yielding
 * movement ids) from `pending` to the spendable balance. Whoever runs it makes sure it runs once
 * per movement (see confirmOutboxPayments).
 *
 * The accounts are locked in id order (the sorted FOR UPDATE subquery) before any is updated, as
 * ledger_record_movement locks them: a batch confirming many payments used to update its accounts
 * in hash order, and a paid write locking two of the same accounts in id order meanwhile made a
 * cycle that Postgres broke by failing one ("deadlock detected", a 500 on the write).
 */
export function releaseHeldCreditsSql(movementIds: RawBuilder<unknown>): RawBuilder<unknown> {
  return moveUserCreditsSql(movementIds, sql`pending = a.pending - c.amount, balance = a.balance + c.amount`);
}

/**
 * The reverse of releaseHeldCreditsSql: the user credits of `movementIds` go back from the
 * spendable balance to `pending` (a payment seen confirmed vanished from the chain). Fails with a
 * CHECK violation when a recipient already spent them.
 */
export function holdCreditsAgainSql(movementIds: RawBuilder<unknown>): RawBuilder<unknown> {
  return moveUserCreditsSql(movementIds, sql`pending = a.pending + c.amount, balance = a.balance - c.amount`);
}

/** Sets `set` on each user account credited by `movementIds` (c.amount: its credits), in id order. */
function moveUserCreditsSql(movementIds: RawBuilder<unknown>, set: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    UPDATE ledger_accounts a
       SET ${set}
      FROM (SELECT held.id, credits.amount
              FROM ledger_accounts held
              JOIN (SELECT ledger_account_id, sum(amount) AS amount FROM ledger_legs
                     WHERE movement_id IN (${movementIds}) AND amount > 0
                     GROUP BY ledger_account_id) credits ON credits.ledger_account_id = held.id
             WHERE held.kind = 'user'
             ORDER BY held.id
               FOR UPDATE OF held) c
     WHERE a.id = c.id`;
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
    units: row.amount,
    counts: row.counts,
  }));
}
