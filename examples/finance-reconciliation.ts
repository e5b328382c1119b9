/**
 * Finance: a day's reconciliation report (ledger against chain) and that day's exceptions, with an
 * API key of an account holding the finance (or admin) role and the `read` scope.
 *
 *   LEDGERFEED_API_KEY=lf_live_... node --import tsx examples/finance-reconciliation.ts 2026-11-27
 */
import { createLedgerfeedClient, LedgerfeedError } from '@ledgerfeed/client';

const baseUrl = process.env.LEDGERFEED_URL ?? 'http://localhost:3000';
const apiKey = process.env.LEDGERFEED_API_KEY;
// Ledger days are UTC days: "today" is today in UTC, not in the local time zone.
const day = process.argv[2] ?? new Date().toISOString().slice(0, 10);

async function main(): Promise<void> {
  if (!apiKey) throw new Error('set LEDGERFEED_API_KEY to an API key of a finance account');
  const client = createLedgerfeedClient({ baseUrl, apiKey });

  const report = await client.reconciliation(day);
  console.log(`reconciliation ${report.date}`);
  console.log(`ledger total $${report.ledger_total_usd}, chain total $${report.chain_total_usd}`);
  console.log(`matched ${report.matched}`);
  const counts = Object.entries(report.exception_counts).map(([status, n]) => `${status} ${n}`);
  console.log(`exceptions by status: ${counts.join(', ')}`);
  const p = report.payment_counts;
  console.log(
    `payments: pending ${p.pending}, confirmed ${p.confirmed}, finalized ${p.finalized}, failed ${p.failed}`,
  );

  // The exceptions page by page (GraphQL cursors); the iterator asks for the next page only when
  // the loop reaches it, so a day with many exceptions is never held in memory at once.
  let listed = 0;
  for await (const e of client.reconciliationExceptions({ day })) {
    listed++;
    // Amounts are micro-USD as decimal strings (exact; never floats).
    console.log(
      `exception ${e.status.toLowerCase()} ${e.signature} ledger ${e.ledgerAmountUsdMicro} chain ${e.chainAmountUsdMicro} µUSD: ${e.detail}`,
    );
  }
  console.log(`${listed} exception(s) listed`);
}

main().catch((error: unknown) => {
  // 403 `forbidden`: the key's account lacks the finance role or the key lacks `read`.
  if (error instanceof LedgerfeedError) console.error(`failed: ${error.error}: ${error.message}`);
  else console.error(`failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
