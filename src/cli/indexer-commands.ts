import { sql } from 'kysely';
import { rewindShipper, shipBatch, unshippedCounts } from '../app/indexer/event-shipper.js';
import { reconcileRound, type ReconcileCursor } from '../app/indexer/reconciler.js';
import type { ReconciliationStatus } from '../domain/reconciliation/reconciliation.js';
import { withIndexerContext, type IndexerCliContext } from './indexer-context.js';
import { createProgress } from './progress.js';
import { parseDayArgument, parseStrict } from './cli-args.js';
import { UsageError } from './usage-error.js';

/** Rows per reconcile round: one batched getTransaction and one ClickHouse insert per round. */
const RECONCILE_ROWS = 500;
/** Rows per shipping batch (events and legs each): bigger than the shipper's default, as nothing else waits. */
const SHIP_ROWS = 20_000;

/** `reconcile --since YYYY-MM-DD`: re-checks every outbox transaction created since that day (UTC). */
export async function reconcileCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseStrict(args, { since: { type: 'string' } });
  if (positionals.length > 0)
    throw new UsageError(`reconcile takes no positional arguments: ${positionals.join(' ')}`);
  if (values.since === undefined) throw new UsageError('reconcile needs --since YYYY-MM-DD');
  const since = new Date(`${parseDayArgument(values.since, '--since')}T00:00:00Z`);
  return withIndexerContext(async (ctx) => {
    const byStatus = await reconcileRange(ctx, since, 'reconcile');
    printStatusCounts(byStatus);
    return 0;
  });
}

/**
 * `reindex`: rebuilds ClickHouse from Postgres and the chain. The shipper's cursors go back to the
 * start and every domain event and ledger leg is shipped again; every outbox transaction's verdict is cleared and checked
 * again. The ClickHouse tables are ReplacingMergeTrees keyed by event, leg and movement id, so the
 * rows shipped again replace the old ones instead of counting twice.
 */
export async function reindexCommand(args: string[]): Promise<number> {
  const { positionals } = parseStrict(args, {});
  if (positionals.length > 0) throw new UsageError(`reindex takes no arguments: ${positionals.join(' ')}`);
  return withIndexerContext(async (ctx) => {
    await rewindShipper(ctx.db);
    const waiting = await unshippedCounts(ctx.db);
    const toShip = waiting.events + waiting.legs;
    const shipping = createProgress('ship     ', toShip);
    let shipped = 0;
    for (;;) {
      const batch = await shipBatch(ctx, SHIP_ROWS);
      if (batch.events + batch.legs === 0) break;
      shipped += batch.events + batch.legs;
      shipping.advance(batch.events + batch.legs);
    }
    shipping.finish();

    await sql`UPDATE chain_transactions
                 SET reconciled_commitment = NULL, reconciled_status = NULL, reconciled_at = NULL`.execute(
      ctx.db,
    );
    const byStatus = await reconcileRange(ctx, new Date(0), 'reconcile');
    console.log(`Shipped ${shipped} domain events and ledger legs to ClickHouse.`);
    printStatusCounts(byStatus);
    return 0;
  });
}

/**
 * Re-checks every outbox transaction created in [since, now), each once, with a progress bar.
 * reconcileRound with `since` alone would select the same first rows every round, so this walks
 * (created_at, id) with the cursor each round returns, up to the moment of the count: rows
 * written meanwhile are the running indexer's, and the total stays true.
 */
async function reconcileRange(
  ctx: IndexerCliContext,
  since: Date,
  label: string,
): Promise<Partial<Record<ReconciliationStatus, number>>> {
  const until = new Date();
  const counted = await ctx.db
    .selectFrom('chain_transactions')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('created_at', '>=', since)
    .where('created_at', '<', until)
    .executeTakeFirstOrThrow();
  const progress = createProgress(label.padEnd(9), Number(counted.n));
  const byStatus: Partial<Record<ReconciliationStatus, number>> = {};
  let after: ReconcileCursor | undefined;
  for (;;) {
    const round = await reconcileRound(ctx, {
      missingAfterMs: ctx.config.RECONCILE_MISSING_AFTER_MS,
      limit: RECONCILE_ROWS,
      since,
      until,
      after,
    });
    for (const [status, n] of Object.entries(round.byStatus) as [ReconciliationStatus, number][]) {
      byStatus[status] = (byStatus[status] ?? 0) + n;
    }
    progress.advance(round.checked);
    // Fewer than a full round: the range is done. (Rows locked by a running indexer are skipped:
    // that indexer is checking them right now.)
    if (round.checked < RECONCILE_ROWS || !round.last) break;
    after = round.last;
  }
  progress.finish();
  return byStatus;
}

function printStatusCounts(byStatus: Partial<Record<ReconciliationStatus, number>>): void {
  const entries = Object.entries(byStatus).sort(([a], [b]) => a.localeCompare(b));
  const total = entries.reduce((sum, [, n]) => sum + n, 0);
  console.log(`Checked ${total} outbox transaction(s)${total > 0 ? ':' : '.'}`);
  for (const [status, n] of entries) console.log(`  ${status.padEnd(16)} ${String(n).padStart(8)}`);
}
