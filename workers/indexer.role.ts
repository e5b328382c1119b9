import type { App } from '../src/app/wiring.js';
import { startLoop } from '../src/app/background-loop.js';
import { reconcileRound, reconciliationLag } from '../src/app/indexer/reconciler.js';
import { followWallets } from '../src/app/indexer/wallet-follower.js';
import type { RunningRole } from './role.js';
import { untracked } from '../src/shutdown/shutdown-steps.js';

const ROUND_ROWS = 500;

/**
 * The indexer role: reconciles every outbox transaction against the chain (at confirmed, then
 * again at finalized) into ClickHouse, and keeps the reconciliation-lag gauge current; and follows
 * our USDC token accounts for what the ledger did not cause (deposits from outside are credited,
 * money leaving our wallets is flagged unexplained). Safe to run in several processes: reconcile
 * rounds claim their rows with SKIP LOCKED, and deposits are keyed by signature.
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
  const follower = startLoop({
    name: 'wallet follower',
    log,
    idleMs: 2_000,
    step: async () => {
      const round = await followWallets(app);
      if (round.deposits > 0) log.info(`credited ${round.deposits} deposit(s) found on chain`);
      if (round.unexplained > 0) {
        log.warn(`${round.unexplained} transaction(s) moved USDC out of our wallets without the ledger`);
      }
      // A round walks every address back to its cursor: nothing is left over for an immediate rerun.
      return false;
    },
  });
  return {
    name: 'indexer',
    summary: [
      `reconciling outbox transactions against ${app.stack.solana.url}`,
      'following platform and user USDC token accounts for deposits and unexplained outflows',
    ],
    stop: async (run = untracked) => {
      // Each loop finishes the round in hand (a round's writes are one transaction per row).
      await Promise.all([
        run('indexer: reconciler', () => loop.stop()),
        run('indexer: wallet follower', () => follower.stop()),
      ]);
    },
  };
}
