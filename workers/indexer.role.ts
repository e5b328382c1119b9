import type { App } from '../src/app/app.js';
import { startLoop } from '../src/app/background-loop.js';
import { reconcileRound, reconciliationLag } from '../src/app/indexer/reconciler.js';
import type { RunningRole } from './role.js';

const ROUND_ROWS = 500;

/**
 * The indexer role: reconciles every outbox transaction against the chain (at confirmed, then
 * again at finalized) into ClickHouse, and keeps the reconciliation-lag gauge current. Safe to run
 * in several processes: rounds claim their rows with SKIP LOCKED.
 */
export function startIndexerRole(app: App): RunningRole {
  const log = app.logger.child({ role: 'indexer' });
  const loop = startLoop({
    name: 'reconciler',
    log,
    idleMs: 1_000,
    step: async () => {
      const round = await reconcileRound(app, {
        missingAfterMs: app.config.RECONCILE_MISSING_AFTER_MS,
        limit: ROUND_ROWS,
      });
      const exceptions = Object.entries(round.byStatus).filter(([status]) => status !== 'matched');
      if (exceptions.length > 0 && exceptions.some(([status]) => status !== 'pending')) {
        log.warn({ byStatus: round.byStatus }, `reconciled ${round.checked} transaction(s) with exceptions`);
      }
      app.metrics.reconciliationLagSeconds.set(await reconciliationLag(app.db));
      return round.checked === ROUND_ROWS;
    },
  });
  return {
    name: 'indexer',
    summary: [`reconciling outbox transactions against ${app.stack.solana.url}`],
    stop: () => loop.stop(),
  };
}
