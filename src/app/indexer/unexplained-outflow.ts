import type { ReconciliationException } from '../../adapters/postgres/reconciliation-events.repository.js';
import type { FetchedTransaction } from './chain-reader.js';
import { clickhouseTime } from './event-shipper.js';

/** The movement id of a reconciliation row that no ledger movement explains. */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** USDC that left one of our wallets in `tx`: `label` names the wallet (a role, `@handle`). */
export interface Outflow {
  label: string;
  owner: string;
  amount: bigint;
}

/**
 * The `unexplained` verdict of a transaction the ledger did not cause that took USDC out of our
 * wallets: its ClickHouse reconciliation row and the exception finance is told about.
 */
export function unexplainedRow(
  tx: FetchedTransaction,
  outflows: readonly Outflow[],
  now: Date,
): { clickhouse: Record<string, unknown>; exception: ReconciliationException } {
  const total = outflows.reduce((sum, outflow) => sum + outflow.amount, 0n);
  const named = outflows.map((o) => `${o.label} (${o.owner}) -${o.amount}`);
  const detail = `USDC left ${named.join(', ')} with no ledger movement`;
  return {
    clickhouse: {
      movement_id: NIL_UUID,
      signature: tx.signature,
      ledger_day: tx.blockTime.toISOString().slice(0, 10),
      status: 'unexplained',
      ledger_amount: '0',
      chain_amount: total.toString(),
      commitment: 'confirmed',
      detail,
      checked_at: clickhouseTime(now),
    },
    exception: {
      signature: tx.signature,
      verdict: 'unexplained',
      ledgerAmountMicro: 0n,
      chainAmountMicro: total,
      detail,
    },
  };
}
