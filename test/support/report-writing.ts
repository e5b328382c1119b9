import { Writable } from 'node:stream';
import { PublicKey } from '@solana/web3.js';
import { sql } from 'kysely';
import { associatedTokenAccount } from '../../src/adapters/solana/index.js';
import type { Db } from '../../src/adapters/postgres/db.js';
import { shipBatch } from '../../src/app/indexer/event-shipper.js';
import type { App } from '../../src/app/wiring.js';
import { writeReport, type WrittenReport } from '../../src/app/reports/write-report.js';
import type { LedgerCurrency } from '../../src/domain/reports/report-format.js';
import { REPORT_COLUMNS, type ReportSpec } from '../../src/domain/reports/report-kinds.js';
import { tokenAccountExists } from './balances.js';
import type { ServiceHarness } from './service-harness.js';

/**
 * What the report-writer tests (test/report-writers.test.ts, test/report-fund-payout.test.ts)
 * share: writing a report into memory through a slow sink, shipping everything to ClickHouse, and
 * the Postgres and chain figures the files are checked against.
 */

/** Gathers what it is given, taking each chunk a tick later: the writer must wait for 'drain'. */
class BufferSink extends Writable {
  chunks: Buffer[] = [];
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.chunks.push(chunk);
    setImmediate(done);
  }
}

/**
 * Writes a report of `spec` (defaults: the interval given, UTC, every column, CSV, no account) into
 * memory, with the mints as the worker passes them (run-report.ts): the localnet's USDC is the
 * configured mainnet address, which platform_wallets does not record.
 */
export async function writeReportToBuffer(
  h: ServiceHarness,
  interval: { start: Date; end: Date },
  spec: Partial<ReportSpec> & Pick<ReportSpec, 'type'>,
): Promise<WrittenReport & { bytes: Buffer }> {
  const sink = new BufferSink({ highWaterMark: 1024 });
  const full: ReportSpec = {
    intervalStart: interval.start,
    intervalEnd: interval.end,
    timezone: 'UTC',
    columns: REPORT_COLUMNS[spec.type],
    format: 'csv',
    accountId: null,
    ...spec,
  };
  const mints = { usdc: h.platform.usdcMint.toBase58(), native: h.platform.nativeMint.toBase58() };
  const written = await writeReport(
    { clickhouse: h.env.app.clickhouse, db: h.env.app.db, mints },
    full,
    sink,
  );
  return { ...written, bytes: Buffer.concat(sink.chunks) };
}

/** Ships every event and leg waiting to ClickHouse. */
export async function shipAll(app: App): Promise<void> {
  for (;;) {
    const shipped = await shipBatch(app);
    if (shipped.events === 0 && shipped.legs === 0) break;
  }
}

/** An owner's tokens of a currency on chain at `confirmed` (getTokenAccountBalance of its ATA; 0 without one). */
export async function onChainAt(h: ServiceHarness, owner: string, currency: LedgerCurrency): Promise<bigint> {
  const mint = currency === 'usdc' ? h.platform.usdcMint : h.platform.nativeMint;
  const ata = associatedTokenAccount(mint, new PublicKey(owner));
  if (!(await tokenAccountExists(h.env.app, ata))) return 0n;
  const { value } = await h.env.app.rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
    ata.toBase58(),
    { commitment: 'confirmed' },
  ]);
  return BigInt(value.amount);
}

/** A file's `currency` cell as the ledger's currency. */
export const currencyOf = (symbol: string | null | undefined): LedgerCurrency =>
  symbol === 'USDC' ? 'usdc' : 'native';

/** Every ledger account's balance per currency at an instant: the sum of its legs before it (Postgres). */
export async function ledgerBalancesAt(
  db: Db,
  at: Date,
): Promise<Array<{ account_id: string | null; kind: string; currency: string; balance: bigint }>> {
  const { rows } = await sql<{ account_id: string | null; kind: string; currency: string; balance: string }>`
    SELECT a.account_id, a.kind, a.currency, sum(l.amount)::text AS balance
      FROM ledger_legs l
      JOIN ledger_movements m ON m.id = l.movement_id
      JOIN ledger_accounts a ON a.id = l.ledger_account_id
     WHERE m.created_at < ${at}
     GROUP BY a.account_id, a.kind, a.currency`.execute(db);
  return rows.map((row) => ({ ...row, balance: BigInt(row.balance) }));
}
