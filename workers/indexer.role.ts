import type { App } from '../src/app/wiring.js';
import { startLoop } from '../src/app/background-loop.js';
import { FOLLOWER_FRESH_MS, reconcileRound, reconciliationLag } from '../src/app/indexer/reconciler.js';
import { createBlockFollower } from '../src/app/indexer/block-follower.js';
import { balanceCheckDue, checkBalances, firstBalanceCheckAt } from '../src/app/indexer/balance-check.js';
import type { RunningRole } from './role.js';
import { untracked } from '../src/shutdown/shutdown-steps.js';

const ROUND_ROWS = 500;

/**
 * The indexer role: reconciles every outbox transaction against the chain (at confirmed, then
 * again at finalized) into ClickHouse, and keeps the reconciliation-lag gauge current; and follows
 * the chain's blocks for what the ledger did not cause on our token accounts (deposits from outside
 * are credited, held until finalized; money leaving our wallets is flagged unexplained). Safe to
 * run in several processes: reconcile rounds claim their rows with SKIP LOCKED, block followers
 * move one cursor by compare-and-set, and deposits are keyed by signature and token account.
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
        // The block follower below reads every block: a payment waits for it rather than being
        // fetched with a getTransaction of its own (unless the follower stopped moving).
        followerFreshMs: FOLLOWER_FRESH_MS,
      });
      const exceptions = Object.entries(round.byStatus).filter(([status]) => status !== 'matched');
      if (exceptions.length > 0 && exceptions.some(([status]) => status !== 'pending')) {
        log.warn({ byStatus: round.byStatus }, `reconciled ${round.checked} transaction(s) with exceptions`);
      }
      app.metrics.reconciliationLagSeconds.set(await reconciliationLag(app.db));
      return round.checked === ROUND_ROWS;
    },
  });
  const blocks = createBlockFollower({ ...app, logger: log });
  const follower = startLoop({
    name: 'block follower',
    log,
    // A second when idle: a deposit reaches its history within about a second of its confirmation
    // (the target is 3 s), and an idle chain's empty blocks cost a round (two RPC requests, a
    // transaction) a second, not one per 400 ms slot (bench:idle).
    idleMs: 1_000,
    step: async () => {
      const round = await blocks.step();
      if (round.deposits > 0)
        log.info(`credited ${round.deposits} deposit(s) found on chain (held until finalized)`);
      if (round.unexplained > 0) {
        log.warn(`${round.unexplained} transaction(s) moved USDC out of our wallets without the ledger`);
      }
      return round.more;
    },
  });
  // The daily balance check: every followed token account's ledger balance against the chain, once
  // a UTC day at BALANCE_CHECK_HOUR_UTC, first at the next such hour after this start (never at
  // start: a test's process starts at any hour). balance_checks keeps it to one run a day across
  // indexer processes; a failed run gives the day back and is tried again (backing off from a
  // minute to 15).
  const balanceHour = app.config.BALANCE_CHECK_HOUR_UTC;
  const balanceFirstAt = firstBalanceCheckAt(new Date(), balanceHour);
  const balanceStopping = new AbortController();
  let balanceCheckedDay = '';
  const balanceCheck = startLoop({
    name: 'balance check',
    log,
    idleMs: 60_000,
    maxBackoffMs: 15 * 60_000,
    step: async () => {
      const now = new Date();
      if (!balanceCheckDue(now, balanceFirstAt, balanceHour)) return false;
      if (balanceCheckedDay === now.toISOString().slice(0, 10)) return false;
      try {
        balanceCheckedDay = (
          await checkBalances({ ...app, logger: log }, { now, signal: balanceStopping.signal })
        ).day;
      } catch (error) {
        if (balanceStopping.signal.aborted) return false; // stopped midway: the day was given back
        throw error;
      }
      return false;
    },
  });
  return {
    name: 'indexer',
    summary: [
      `reconciling outbox transactions against ${app.stack.solana.url}`,
      'following the chain block by block for deposits to our token accounts and unexplained outflows',
      `comparing every followed token account's ledger balance with the chain daily at ${String(balanceHour).padStart(2, '0')}:00 UTC (first ${balanceFirstAt.toISOString()})`,
    ],
    stop: async (run = untracked) => {
      // Each loop finishes the round in hand (a round's writes are one transaction per row).
      await Promise.all([
        run('indexer: reconciler', () => loop.stop()),
        run('indexer: block follower', () => follower.stop()),
        run('indexer: balance check', () => (balanceStopping.abort(), balanceCheck.stop())),
      ]);
    },
  };
}
