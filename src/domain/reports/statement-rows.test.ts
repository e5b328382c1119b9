import { describe, expect, test } from 'vitest';
import { transactionTypeOf } from '../ledger/transaction-history.js';
import { HISTORY_TYPE_CASES, historyTypeSql } from './history-types.js';
import { HISTORY_TYPES } from './report-kinds.js';
import { cointrackerRows, koinlyRows, type StatementLine } from './statement-rows.js';

const at = Date.UTC(2026, 10, 2, 7, 5, 9);
const line = (over: Partial<StatementLine>): StatementLine => ({
  createdAtMs: at,
  movementId: 'm1',
  kind: 'post',
  currency: 'usdc',
  type: 'post',
  amount: -1_000_000n,
  description: 'Post',
  swapTx: 'sig1',
  ...over,
});

describe('accounting tool rows', () => {
  test('koinly: a spend in Sent with the cost label, an engagement share in Received as income, UTC dates', () => {
    expect(koinlyRows([line({})])).toEqual([
      ['2026-11-02 07:05:09', '1.000000', 'USDC', '', '', '', '', '', '', 'cost', 'Post', 'sig1'],
    ]);
    expect(koinlyRows([line({ type: 'earn', amount: 500_000n, description: 'Earned' })])[0]?.[9]).toBe(
      'income',
    );
    expect(
      koinlyRows([line({ kind: 'fund_payout', type: 'earn', currency: 'native', amount: 5n })])[0],
    ).toEqual(expect.arrayContaining(['0.000000005', 'LFEED', 'reward']));
    expect(koinlyRows([line({ kind: 'deposit', type: 'deposit', amount: 5n })])[0]?.[9]).toBe('');
  });

  test('a swap is one trade row with both sides and no label; cointracker tags engagement shares as payment', () => {
    const swap = [
      line({ kind: 'swap', type: 'swap', currency: 'native', amount: -2_000_000_000n }),
      line({ kind: 'swap', type: 'swap', currency: 'usdc', amount: 1_500_000n }),
    ];
    expect(koinlyRows(swap)).toEqual([
      ['2026-11-02 07:05:09', '2.000000000', 'LFEED', '1.500000', 'USDC', '', '', '', '', '', 'Post', 'sig1'],
    ]);
    expect(cointrackerRows(swap)).toEqual([
      ['11/02/2026 07:05:09', '1.500000', 'USDC', '2.000000000', 'LFEED', '', '', ''],
    ]);
    expect(cointrackerRows([line({ type: 'earn', amount: 500_000n })])).toEqual([
      ['11/02/2026 07:05:09', '0.500000', 'USDC', '', '', '', '', 'payment'],
    ]);
  });

  test('every history type case is one of HISTORY_TYPES and the SQL prints transactionTypeOf', () => {
    for (const { kind, spent, type } of HISTORY_TYPE_CASES) {
      expect(HISTORY_TYPES).toContain(type);
      expect(type).toBe(transactionTypeOf(kind, spent));
    }
    expect(historyTypeSql('k', 'a')).toContain("WHEN k = 'reversal' AND a < 0 THEN 'refund'");
  });
});
