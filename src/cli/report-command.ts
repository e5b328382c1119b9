import {
  cursorOf,
  reconciliationExceptions,
  reconciliationSummary,
  type ReconciliationRow,
} from '../app/analytics/analytics-reads.js';
import { RECONCILIATION_STATUSES } from '../domain/reconciliation/reconciliation.js';
import { formatMicroUsd } from '../domain/money/usd.js';
import { withIndexerContext } from './indexer-context.js';
import { parseDayArgument, parseStrict } from './cli-args.js';
import { UsageError } from './usage-error.js';

/** Exceptions read per ClickHouse query; a day's list is read page by page until it ends. */
const PAGE = 1_000;

/**
 * `report --date YYYY-MM-DD`: the day's ledger vs chain totals, counts by status, payments by
 * outbox state, the exceptions.
 */
export async function reportCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseStrict(args, { date: { type: 'string' } });
  if (positionals.length > 0)
    throw new UsageError(`report takes no positional arguments: ${positionals.join(' ')}`);
  if (values.date === undefined) throw new UsageError('report needs --date YYYY-MM-DD');
  const day = parseDayArgument(values.date, '--date');

  return withIndexerContext(async (ctx) => {
    const [summary] = await reconciliationSummary(ctx, day, day);
    const exceptions: ReconciliationRow[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await reconciliationExceptions(ctx, { day, first: PAGE, after });
      exceptions.push(...page.rows);
      if (!page.hasMore) break;
      after = cursorOf(ctx, page.rows[page.rows.length - 1]!);
    }

    const ledger = summary?.ledgerTotalMicro ?? 0n;
    const chain = summary?.chainTotalMicro ?? 0n;
    console.log(`Reconciliation report for ${day} (UTC, by ledger day)\n`);
    console.log(`  ledger total  ${usd(ledger).padStart(18)}`);
    console.log(`  chain total   ${usd(chain).padStart(18)}`);
    console.log(`  difference    ${usd(chain - ledger).padStart(18)}\n`);
    console.log('  status              count');
    for (const status of RECONCILIATION_STATUSES) {
      const n = status === 'matched' ? (summary?.matched ?? 0) : (summary?.exceptions[status] ?? 0);
      console.log(`  ${status.padEnd(16)} ${String(n).padStart(8)}`);
    }
    console.log('\n  outbox state        count');
    for (const [state, n] of Object.entries(summary?.payments ?? {})) {
      console.log(`  ${state.padEnd(16)} ${String(n).padStart(8)}`);
    }
    console.log('');
    if (exceptions.length === 0) {
      console.log(summary ? 'No exceptions.' : `Nothing was reconciled for ${day}.`);
      return 0;
    }
    console.log(`Exceptions (${exceptions.length}):\n`);
    printTable(
      ['status', 'signature', 'ledger', 'chain', 'detail'],
      exceptions.map((row) => [
        row.status,
        row.signature,
        usd(row.ledgerAmountMicro),
        usd(row.chainAmountMicro),
        row.detail,
      ]),
      [false, false, true, true, false],
    );
    return 0;
  });
}

/** Dollars with at least cents: $12.50, $0.000001, -$3.00. */
function usd(micro: bigint): string {
  const text = formatMicroUsd(micro < 0n ? -micro : micro);
  const [whole, fraction = ''] = text.split('.');
  return `${micro < 0n ? '-' : ''}$${whole}.${fraction.padEnd(2, '0')}`;
}

function printTable(headers: string[], rows: string[][], rightAligned: boolean[]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const format = (cells: string[]) =>
    cells
      .map((cell, i) => (rightAligned[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  console.log(format(headers));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(format(row));
}
