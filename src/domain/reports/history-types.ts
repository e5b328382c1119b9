import { transactionTypeOf, type TransactionType } from '../ledger/transaction-history.js';
import type { MovementKind } from '../ledger/ledger.js';

/** Every movement kind (a new kind fails to compile here until it is listed). */
export const MOVEMENT_KINDS = Object.keys({
  post: true,
  repost: true,
  send: true,
  deposit: true,
  earn: true,
  reversal: true,
  swap: true,
  fund_payout: true,
} satisfies Record<MovementKind, true>) as MovementKind[];

/**
 * The history type of a leg for every movement kind and sign, from the history's one definition
 * (transactionTypeOf): the shipper prints it into SQL for Postgres, the report writers for
 * ClickHouse (legs shipped before schema/clickhouse/0004), so the history and every report agree.
 */
export const HISTORY_TYPE_CASES: ReadonlyArray<{
  kind: MovementKind;
  spent: boolean;
  type: TransactionType;
}> = MOVEMENT_KINDS.flatMap((kind) =>
  [true, false].map((spent) => ({ kind, spent, type: transactionTypeOf(kind, spent) })),
);

/** The cases as one SQL expression over a kind column and an amount column (Postgres or ClickHouse). */
export function historyTypeSql(kindColumn: string, amountColumn: string): string {
  const whens = HISTORY_TYPE_CASES.map(
    ({ kind, spent, type }) =>
      `WHEN ${kindColumn} = '${kind}' AND ${amountColumn} ${spent ? '<' : '>='} 0 THEN '${type}'`,
  );
  return `CASE ${whens.join(' ')} ELSE '' END`;
}
