import { sql, type RawBuilder } from 'kysely';
import type { HistoryRow, TransactionHistoryStore } from '../../domain/ledger/transaction-history.js';
import type { ChainTransactionStatus } from './database.js';
import type { Db } from './db.js';

/**
 * The history of an account, read from the ledger: its legs (summed per movement, so a movement
 * is one entry however many legs of the account it has), their movement, the post the movement
 * paid for and the movement's chain transaction (with its state: status, slot, confirmation and
 * finalization times: the outbox row's, or for a deposit its deposit_transactions row's). A reversal has neither post nor chain transaction of its own: it shows
 * those of the movement it reverses. An account with no ledger account has no legs, hence an
 * empty history.
 *
 * Ordering needs every movement of the account (there is no per-account index on the movement's
 * time); fine at today's volumes, a denormalised `(ledger_account_id, created_at)` index is the fix
 * when histories grow long. A look-up by signature reads only the movements of that signature.
 */
export function createTransactionHistoryStore(db: Db): TransactionHistoryStore {
  return {
    page: async (accountId, { limit, after }) => {
      let query = historyQuery(db, accountId)
        .orderBy('m.created_at', 'desc')
        .orderBy('m.id', 'desc')
        .limit(limit);
      if (after) {
        query = query.where(
          sql<boolean>`(m.created_at, m.id) < (${after.createdAt}::timestamptz, ${after.movementId}::uuid)`,
        );
      }
      return (await query.execute()).map(toHistoryRow);
    },
    bySignature: async (accountId, signature) => {
      // The movement of the outbox row that is, or was before a re-sign, this signature (unique and
      // GIN indexes), or the deposit keyed by it (unique). Reversals are not the payment.
      const movements = sql<boolean>`l.movement_id IN (
          SELECT movement_id FROM chain_transactions
           WHERE signature = ${signature} OR replaced_signatures @> ARRAY[${signature}::text]
          UNION ALL
          SELECT id FROM ledger_movements WHERE idempotency_key = ${`deposit:${signature}`}
          UNION ALL
          SELECT movement_id FROM deposit_transactions WHERE signature = ${signature})`;
      const rows = await historyQuery(db, accountId, movements)
        .orderBy('m.created_at', 'desc')
        .orderBy('m.id', 'desc')
        .execute();
      return rows.map(toHistoryRow);
    },
  };
}

/**
 * The account's history rows of the given movements (a statement's descriptions, swap_tx, related
 * post, counterparty and state, exactly as the history shows them), in no particular order.
 */
export async function historyRowsOfMovements(
  db: Db,
  accountId: string,
  movementIds: readonly string[],
): Promise<HistoryRow[]> {
  if (movementIds.length === 0) return [];
  const rows = await historyQuery(
    db,
    accountId,
    sql<boolean>`l.movement_id = ANY(${[...movementIds]}::uuid[])`,
  ).execute();
  return rows.map(toHistoryRow);
}

/** The history's statement, of every movement of the account or only of those `movements` names. */
function historyQuery(db: Db, accountId: string, movements?: RawBuilder<boolean>) {
  return (
    db
      .with('mine', (qb) => {
        let legs = qb
          .selectFrom('ledger_legs as l')
          .innerJoin('ledger_accounts as la', 'la.id', 'l.ledger_account_id')
          .innerJoin('ledger_movements as lm', 'lm.id', 'l.movement_id')
          .leftJoin('ledger_movements as lr', 'lr.id', 'lm.reverses_id')
          .where('la.account_id', '=', accountId)
          // The history is in dollars: native legs (a swap's tokens) are not summed in. A
          // creator-fund payout (or its reversal) is native only: its entry is listed with
          // 0 dollars and its tokens beside them.
          .where((eb) =>
            eb.or([
              eb('la.currency', '=', 'usdc'),
              eb(sql<string>`coalesce(lr.kind, lm.kind)`, '=', 'fund_payout'),
            ]),
          );
        if (movements) legs = legs.where(movements);
        return legs
          .groupBy('l.movement_id')
          .select([
            'l.movement_id',
            sql<bigint>`coalesce(sum(l.amount) FILTER (WHERE la.currency = 'usdc'), 0)::bigint`.as('amount'),
            sql<bigint>`coalesce(sum(l.amount) FILTER (WHERE la.currency = 'native'), 0)::bigint`.as(
              'native_amount',
            ),
          ]);
      })
      .selectFrom('mine')
      .innerJoin('ledger_movements as m', 'm.id', 'mine.movement_id')
      .leftJoin('ledger_movements as r', 'r.id', 'm.reverses_id')
      .leftJoin('posts as p', (join) => join.on(sql<boolean>`p.movement_id = coalesce(m.reverses_id, m.id)`))
      // A repost's movement names the reposted post (its related post).
      .leftJoin('reposts as rp', (join) =>
        join.on(sql<boolean>`rp.movement_id = coalesce(m.reverses_id, m.id)`),
      )
      // A send's movement: the other party (from this account's side) and the memo.
      .leftJoin('sends as s', (join) => join.on(sql<boolean>`s.movement_id = coalesce(m.reverses_id, m.id)`))
      .leftJoin('accounts as other', (join) =>
        join.on(
          sql<boolean>`other.id = case when s.sender_id = ${accountId}::uuid then s.recipient_id else s.sender_id end`,
        ),
      )
      .leftJoin('chain_transactions as ct', (join) =>
        join.on(sql<boolean>`ct.movement_id = coalesce(m.reverses_id, m.id)`),
      )
      // A deposit has no outbox row: its chain transaction is followed in deposit_transactions.
      .leftJoin('deposit_transactions as dt', (join) =>
        join.on(sql<boolean>`dt.movement_id = coalesce(m.reverses_id, m.id)`),
      )
      .select([
        'm.id',
        'm.kind',
        'mine.amount',
        'm.created_at',
        // Microseconds kept as text: a Date would round them to milliseconds.
        sql<string>`to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as(
          'created_at_exact',
        ),
        'm.idempotency_key',
        'mine.native_amount',
        'r.kind as reversed_kind',
        'r.idempotency_key as reversed_key',
        'ct.signature',
        // A deposit whose block a fork dropped (reversed) failed as far as its owner is concerned.
        sql<ChainTransactionStatus | null>`coalesce(ct.status, CASE dt.status WHEN 'reversed' THEN 'failed' ELSE dt.status END)`.as(
          'chain_status',
        ),
        sql<bigint | null>`coalesce(ct.slot, dt.slot)`.as('chain_slot'),
        sql<Date | null>`coalesce(ct.confirmed_at, dt.confirmed_at)`.as('confirmed_at'),
        sql<Date | null>`coalesce(ct.finalized_at, dt.finalized_at)`.as('finalized_at'),
        sql<string | null>`coalesce(p.id, rp.post_id)`.as('post_id'),
        'p.type as post_type',
        's.id as send_id',
        's.memo as send_memo',
        'other.handle as counterparty',
      ])
  );
}

type HistoryQueryRow = Awaited<ReturnType<ReturnType<typeof historyQuery>['execute']>>[number];

function toHistoryRow(row: HistoryQueryRow): HistoryRow {
  return {
    movementId: row.id,
    kind: row.kind,
    amountMicro: row.amount,
    nativeAmount: row.native_amount,
    createdAt: row.created_at,
    createdAtExact: row.created_at_exact,
    idempotencyKey: row.idempotency_key,
    reversed: row.reversed_kind ? { kind: row.reversed_kind, idempotencyKey: row.reversed_key } : null,
    chainSignature: row.signature,
    // A repost's related post is the reposted one (no post row of its own: typed as a post).
    post: row.post_id ? { id: row.post_id, type: row.post_type ?? 'post' } : null,
    send: row.send_id ? { counterparty: row.counterparty ?? '', memo: row.send_memo } : null,
    outbox: row.chain_status
      ? {
          status: row.chain_status,
          slot: row.chain_slot,
          confirmedAt: row.confirmed_at,
          finalizedAt: row.finalized_at,
        }
      : null,
  };
}
