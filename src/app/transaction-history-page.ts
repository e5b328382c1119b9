import type { Db } from '../adapters/postgres/db.js';
import { createTransactionHistoryStore } from '../adapters/postgres/transaction-history.repository.js';
import { DEFAULT_CURSOR_SECRET } from '../domain/ledger/history-cursor.js';
import {
  listTransactions,
  type HistoryArgNames,
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
