import { listPlatformWallets } from '../../../adapters/postgres/platform-wallets.repository.js';
import { HISTORY_TYPES, REPORT_COLUMNS, type ReportSpec } from '../../../domain/reports/report-kinds.js';
import {
  currencySymbol,
  formatUnits,
  ledgerCurrency,
  NATIVE_SYMBOL,
  type LedgerCurrency,
} from '../../../domain/reports/report-format.js';
import type { ReportSummaryLine } from '../../../domain/reports/report-kinds.js';
import { STREAM_SETTINGS } from '../../../adapters/clickhouse/index.js';
import type { ReportWriterDeps, WrittenReport } from '../write-report.js';
import { LEG_TYPE_SQL } from './ledger-itemized.js';
import { reportAccountsTable, syncReportAccounts } from './report-accounts.js';
import { columnPicker, rowPrinter, type ReportSink } from './report-sink.js';
import {
  intervalParams,
  sqlDecimals,
  sqlSymbol,
  sqlUnits,
  writeParquet,
  parquetColumns,
} from './report-query.js';

/**
 * The platform ledger accounts that have a wallet of their own on chain, and its
 * `platform_wallets` role: the treasury and the creator fund hold their tokens in their wallets'
 * token accounts, the swap pool in the pool authority's. The fee pool and `external` have none.
 */
const PLATFORM_WALLET_ROLES: Record<string, string> = {
  treasury: 'treasury',
  creator_fund: 'creator_fund',
  swap_pool: 'pool_authority',
};

type SummaryRow = Record<string, string>;

/**
 * One row per ledger account and currency with a balance before `end` or a leg in the interval:
 * opening (legs before `start`), the interval's legs summed per history type (each leg in exactly
 * one column: the types are the transactionTypeOf cases), closing (every leg before `end`), and
 * for an account with a wallet, its tokens on chain at `end` (token_movements of that owner and the
 * currency's mint with block_time before `end`). `x_other` (legs of no listed type) must be 0.
 */
function summaryQuery(t: (name: string) => string): string {
  const inInterval = `created_at >= {start:DateTime64(3, 'UTC')}`;
  const perType = HISTORY_TYPES.map(
    (type) => `toString(sumIf(amount, ${inInterval} AND leg_type = '${type}')) AS x_${type}`,
  );
  const listed = HISTORY_TYPES.map((type) => `'${type}'`).join(', ');
  return `SELECT x_account, x_account_kind, x_currency, x_opening, ${HISTORY_TYPES.map((type) => `x_${type}`).join(', ')},
                 x_other, x_closing,
                 x_wallet != '' AS x_has_wallet,
                 if(x_wallet != '', toString(ifNull(chain.amount, 0)), '') AS x_chain_closing
            FROM (
              SELECT any(if(account_kind = 'user', ua.handle, toString(account_kind))) AS x_account,
                     toString(account_kind) AS x_account_kind, toString(currency) AS x_currency,
                     toString(sumIf(amount, NOT (${inInterval}))) AS x_opening,
                     ${perType.join(',\n                     ')},
                     toString(sumIf(amount, ${inInterval} AND leg_type NOT IN (${listed}))) AS x_other,
                     toString(sum(amount)) AS x_closing,
                     countIf(${inInterval}) AS x_moves,
                     any(if(account_kind = 'user', ua.wallet_address,
                            transform(toString(account_kind), {platformKinds:Array(String)}, {platformWallets:Array(String)}, ''))) AS x_wallet,
                     any(transform(toString(currency), ['usdc', 'native'], [{usdcMint:String}, {nativeMint:String}], '')) AS x_mint
                FROM (SELECT account_id, account_kind, currency, amount, created_at, ${LEG_TYPE_SQL} AS leg_type
                        FROM ${t('ledger_legs')} FINAL WHERE created_at < {end:DateTime64(3, 'UTC')}) AS l
                LEFT JOIN ${reportAccountsTable(t('report_accounts'))} AS ua ON ua.account_id = l.account_id
               GROUP BY l.account_id, account_kind, currency
              HAVING x_opening != '0' OR x_moves > 0
            ) AS s
            LEFT JOIN (SELECT owner, mint, sum(amount) AS amount FROM ${t('token_movements')} FINAL
                        WHERE block_time < {end:DateTime64(3, 'UTC')} AND mint IN ({usdcMint:String}, {nativeMint:String})
                        GROUP BY owner, mint) AS chain
              ON chain.owner = s.x_wallet AND chain.mint = s.x_mint
           ORDER BY x_account_kind = 'user', x_account_kind, x_account, x_currency`;
}

/** balance.summary in csv, jsonl or parquet; its summary is the platform accounts' totals per currency. */
export async function writeBalanceSummary(
  deps: ReportWriterDeps,
  spec: ReportSpec,
  out: ReportSink,
  signal: AbortSignal | undefined,
): Promise<WrittenReport> {
  const ch = deps.clickhouse;
  await syncReportAccounts(deps, signal);
  const addresses = new Map((await listPlatformWallets(deps.db)).map((row) => [row.role, row.address]));
  const platformKinds = Object.keys(PLATFORM_WALLET_ROLES).filter((kind) =>
    addresses.has(PLATFORM_WALLET_ROLES[kind]!),
  );
  const base = {
    query: summaryQuery((name) => ch.table(name)),
    params: {
      ...intervalParams(spec),
      platformKinds,
      platformWallets: platformKinds.map((kind) => addresses.get(PLATFORM_WALLET_ROLES[kind]!) ?? ''),
      usdcMint: deps.mints?.usdc ?? addresses.get('usdc_mint') ?? '',
      nativeMint: deps.mints?.native ?? addresses.get('native_mint') ?? '',
    },
  };
  const totals = new Map<LedgerCurrency, { opening: bigint; closing: bigint }>();
  const summaryOf = (): ReportSummaryLine[] =>
    [...totals].map(([currency, { opening, closing }]) => ({
      currency: currencySymbol(currency),
      opening: formatUnits(opening, currency),
      closing: formatUnits(closing, currency),
    }));
  // The summary is read in a first pass (few rows: one per account and currency) so Parquet gets it
  // too; that pass also counts the file's rows.
  const all = REPORT_COLUMNS['balance.summary'];
  const rows: AsyncIterable<SummaryRow> = ch.streamRows<SummaryRow>({
    query: `${base.query} ${STREAM_SETTINGS}`,
    query_params: base.params,
    ...(signal ? { abort_signal: signal } : {}),
  });
  if (spec.format === 'parquet') {
    let rowCount = 0;
    for await (const row of rows) {
      addTotals(totals, row);
      rowCount += 1;
    }
    const parquet: Record<string, string> = {
      account: 'x_account',
      account_kind: 'x_account_kind',
      currency: sqlSymbol('x_currency', NATIVE_SYMBOL),
      chain_closing: `if(x_has_wallet, ${sqlUnits('toInt64OrZero(x_chain_closing)', sqlDecimals('x_currency'))}, NULL)`,
      difference: `if(x_has_wallet, ${sqlUnits('(toInt64(x_closing) - toInt64OrZero(x_chain_closing))', sqlDecimals('x_currency'))}, NULL)`,
    };
    for (const name of ['opening', ...HISTORY_TYPES, 'closing']) {
      parquet[name] = sqlUnits(`toInt64(x_${name})`, sqlDecimals('x_currency'));
    }
    return {
      rowCount: await writeParquet(
        ch,
        out,
        { ...base, rowCount },
        parquetColumns(spec.columns, parquet),
        signal,
      ),
      summary: summaryOf(),
    };
  }
  if (spec.format !== 'csv' && spec.format !== 'jsonl')
    throw new Error(`balance.summary has no ${spec.format} format`);
  const printer = rowPrinter(spec.format, spec.columns);
  const pick = columnPicker(all, spec.columns);
  await out.text(printer.header());
  let rowCount = 0;
  for await (const row of rows) {
    addTotals(totals, row);
    const currency = ledgerCurrency(row.x_currency ?? '');
    const units = (name: string) => formatUnits(BigInt(row[`x_${name}`] ?? '0'), currency);
    const hasWallet = String(row.x_has_wallet) === '1';
    const chainClosing = hasWallet ? BigInt(row.x_chain_closing ?? '0') : null;
    await out.text(
      printer.row(
        pick([
          row.x_account ?? '',
          row.x_account_kind ?? '',
          currencySymbol(currency),
          units('opening'),
          ...HISTORY_TYPES.map(units),
          units('closing'),
          chainClosing === null ? null : formatUnits(chainClosing, currency),
          chainClosing === null ? null : formatUnits(BigInt(row.x_closing ?? '0') - chainClosing, currency),
        ]),
      ),
    );
    rowCount += 1;
  }
  await out.flush();
  return { rowCount, summary: summaryOf() };
}

/** Adds a row to the platform totals (platform accounts only) and checks that every leg has a type column. */
function addTotals(totals: Map<LedgerCurrency, { opening: bigint; closing: bigint }>, row: SummaryRow): void {
  if (BigInt(row.x_other ?? '0') !== 0n) {
    throw new Error(`legs of ${row.x_account} with no history type: ${row.x_other} base units`);
  }
  if (row.x_account_kind === 'user') return;
  const currency = ledgerCurrency(row.x_currency ?? '');
  const total = totals.get(currency) ?? { opening: 0n, closing: 0n };
  total.opening += BigInt(row.x_opening ?? '0');
  total.closing += BigInt(row.x_closing ?? '0');
  totals.set(currency, total);
}
