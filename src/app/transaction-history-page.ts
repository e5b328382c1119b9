import type { Db } from '../adapters/postgres/db.js';
import { createTransactionHistoryStore } from '../adapters/postgres/transaction-history.repository.js';
import { DEFAULT_CURSOR_SECRET } from '../domain/ledger/history-cursor.js';
import {
  findPayment,
  listTransactions,
  type HistoryArgNames,
  type Transaction,
  type TransactionPage,
} from '../domain/ledger/transaction-history.js';

export interface TransactionHistoryAppDeps {
  db: Db;
  /**
   * HMAC secret of history cursors.
   * @defaultValue DEFAULT_CURSOR_SECRET (tamper-evident; pass a deployment secret to make cursors unforgeable)
   */
  cursorSecret?: string;
}

/** The one entry point REST GET /me/transactions and GraphQL `viewer.transactions` share. */
export function transactionHistory(
  deps: TransactionHistoryAppDeps,
  accountId: string,
  input: { limit?: unknown; cursor?: string | null },
  names?: HistoryArgNames,
): Promise<TransactionPage> {
  return listTransactions(
    {
      history: createTransactionHistoryStore(deps.db),
      cursorSecret: deps.cursorSecret ?? DEFAULT_CURSOR_SECRET,
    },
    accountId,
    input,
    names,
  );
}

/**
 * One payment of the account by its swap_tx (or a signature it had before a re-sign), as its
 * history shows it, with its state: REST GET /payments/{swap_tx} and GraphQL `payment(swapTx)`.
 * Not the account's, unknown or malformed: not_found.
 */
export function paymentBySwapTx(
  deps: Pick<TransactionHistoryAppDeps, 'db'>,
  accountId: string,
  swapTx: string,
): Promise<Transaction> {
  return findPayment({ history: createTransactionHistoryStore(deps.db) }, accountId, swapTx);
}
