import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import {
  claimBalanceCheck,
  finishBalanceCheck,
  followedBalancesAfter,
  followedBalancesOf,
  releaseBalanceCheck,
  type CheckedMints,
  type FollowedBalanceRow,
} from '../../adapters/postgres/balance-checks.repository.js';
import type { Db } from '../../adapters/postgres/db.js';
import { inTransaction } from '../../adapters/postgres/unit-of-work.js';
import {
  stageReconciliationExceptions,
  type ReconciliationException,
} from '../../adapters/postgres/reconciliation-events.repository.js';
import type { PlatformChain, RpcClient } from '../../adapters/solana/index.js';
import type { Metrics } from '../../observability/metrics.js';
import { withBackoff } from './chain-reader.js';
import { clickhouseTime } from './event-shipper.js';

export interface BalanceCheckDeps {
  db: Db;
  clickhouse: ClickHouse;
  rpc: RpcClient;
  metrics: Metrics;
  logger: Logger;
  bootstrapChain(): Promise<PlatformChain>;
}

export interface BalanceCheckOptions {
  /** The instant whose UTC day is checked (and recorded in balance_checks). @defaultValue now */
  now?: Date;
  /** Run even when the day was checked already (or is being checked). @defaultValue false */
  force?: boolean;
  /**
   * Pause before the second look at the accounts that differed. A payment is debited in the ledger
   * before it lands and its credit held in `pending` before it confirms, so an account with a
   * payment in flight differs for a second or two; a deposit lands on chain before the block
   * follower credits it (about a second). 30 s lets both settle. @defaultValue 30_000
   */
  recheckAfterMs?: number;
  /**
   * How the pause is spent; a test settles a payment in it. Rejects when `signal` aborts.
   * @defaultValue a timer of `recheckAfterMs`
   */
  pause?: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /** Token accounts read from Postgres per page (their chain reads: 100 a call). @defaultValue 1_000 */
  pageSize?: number;
  /** A progress line every this many pages. @defaultValue 100 (100,000 token accounts) */
  logEveryPages?: number;
  /** Stops the run between pages and during the pause (the day is given back, unfinished). */
  signal?: AbortSignal;
}

export interface BalanceCheckResult {
  /** The UTC day checked, YYYY-MM-DD. */
  day: string;
  /** The day was checked (or is being checked) already: nothing was done. */
  skipped: boolean;
  /** Token accounts compared. */
  accounts: number;
  /** Of those, how many differed at the first look. */
  differed: number;
  /** Differed again at the second look but with other amounts (still moving): not judged today. */
  moving: number;
  /** balance_mismatch exceptions raised: differed twice with the same amounts. */
  mismatches: number;
}

/** Addresses per getMultipleAccounts call (the RPC's maximum), and calls in flight at once. */
const ACCOUNTS_PER_CALL = 100;
const CALLS_IN_FLIGHT = 4;
/**
 * Differences kept for the second look at most (~200 bytes each). More than this at once is not a
 * few accounts out of line but something wholesale (a wrong mint, a ledger restored from an old
 * backup): the first ones are judged and the run says how many it left out.
 */
const MAX_DIFFERENCES = 100_000;
/**
 * A day's run whose row is still unfinished this long after it started died with its process: the
 * next attempt takes the day over. Far above a run's length (1,000,000 token accounts are 10,000
 * calls: minutes at a few hundred calls a second).
 */
const ABANDONED_AFTER_MS = 3 * 3_600_000;
/** The movement id of a reconciliation row that no ledger movement explains. */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * The daily safety net (issue 52): compares every followed token account's ledger amount (balance
 * + pending of its owner's ledger account in the mint's currency) with what the chain holds at
 * `confirmed`. Walks followed_token_accounts in keyset pages (never all in memory), reads each
 * page's accounts with getMultipleAccounts (100 a call), and looks again after `recheckAfterMs` at
 * those that differed: payments in flight make short-lived differences. Only a difference seen twice
 * with the same two amounts becomes a `balance_mismatch` exception (a staged
 * `reconciliation.exception` for finance and a ClickHouse reconciliation row dated the day). One
 * run per UTC day (balance_checks): a second call that day does nothing unless `force`.
 */
export async function checkBalances(
  deps: BalanceCheckDeps,
  options: BalanceCheckOptions = {},
): Promise<BalanceCheckResult> {
  const now = options.now ?? new Date();
  const day = now.toISOString().slice(0, 10);
  const outcome: BalanceCheckResult = {
    day,
    skipped: false,
    accounts: 0,
    differed: 0,
    moving: 0,
    mismatches: 0,
  };
  const claim = await claimBalanceCheck(deps.db, day, {
    force: options.force ?? false,
    abandonedAfterMs: ABANDONED_AFTER_MS,
  });
  if (!claim) return { ...outcome, skipped: true };

  const log = deps.logger;
  const started = Date.now();
  const pageSize = options.pageSize ?? 1_000;
  const logEvery = options.logEveryPages ?? 100;
  const recheckAfterMs = options.recheckAfterMs ?? 30_000;
  const pause = options.pause ?? ((ms, signal) => sleep(ms, undefined, { signal }));
  try {
    const platform = await deps.bootstrapChain();
    const mints: CheckedMints = {
      usdc: platform.usdcMint.toBase58(),
      native: platform.nativeMint.toBase58(),
    };
    log.info(`balance check ${day}: comparing every followed token account's ledger balance with the chain`);

    const differences = new Map<string, Difference>();
    let leftOut = 0;
    let after = 0n;
    for (let pages = 1; ; pages++) {
      options.signal?.throwIfAborted();
      const page = await followedBalancesAfter(deps.db, after, pageSize, mints);
      const chain = await chainAmounts(
        deps.rpc,
        page.rows.map((row) => row.tokenAccount),
      );
      for (const row of page.rows) {
        const chainUnits = chain.get(row.tokenAccount) ?? 0n;
        if (chainUnits === row.ledgerUnits) continue;
        outcome.differed++;
        if (differences.size < MAX_DIFFERENCES) differences.set(row.tokenAccount, { row, chainUnits });
        else leftOut++;
      }
      outcome.accounts += page.rows.length;
      after = page.next;
      if (page.done) break;
      if (pages % logEvery === 0) {
        log.info(
          `balance check ${day}: ${outcome.accounts.toLocaleString('en-US')} token accounts compared, ${outcome.differed} differ so far (${seconds(started)} s)`,
        );
      }
    }
    if (leftOut > 0) {
      log.error(
        `balance check ${day}: ${outcome.differed} token accounts differ from the ledger: more than a few payments in flight; the first ${MAX_DIFFERENCES} are looked at again, ${leftOut} are left out`,
      );
    }

    const mismatches: Difference[] = [];
    if (differences.size > 0) {
      log.info(
        `balance check ${day}: ${differences.size} token account(s) differ from the ledger; looking again in ${Math.round(recheckAfterMs / 1000)} s (payments in flight settle meanwhile)`,
      );
      await pause(recheckAfterMs, options.signal);
      const keys = [...differences.keys()];
      for (let from = 0; from < keys.length; from += pageSize) {
        options.signal?.throwIfAborted();
        const rows = await followedBalancesOf(deps.db, keys.slice(from, from + pageSize), mints);
        const chain = await chainAmounts(
          deps.rpc,
          rows.map((row) => row.tokenAccount),
        );
        for (const row of rows) {
          const first = differences.get(row.tokenAccount)!;
          const chainUnits = chain.get(row.tokenAccount) ?? 0n;
          if (chainUnits === row.ledgerUnits) continue;
          if (chainUnits === first.chainUnits && row.ledgerUnits === first.row.ledgerUnits) {
            mismatches.push({ row, chainUnits });
          } else {
            outcome.moving++;
          }
        }
      }
    }

    const checkedAt = new Date();
    const rows = mismatches.map((m) => balanceMismatchRow(day, m, checkedAt));
    // ClickHouse first: its rows collapse by key if the staging below fails and the day runs again.
    await deps.clickhouse.insertRows(
      'reconciliation',
      rows.map((row) => row.clickhouse),
    );
    outcome.mismatches = mismatches.length;
    // The exceptions and the day's row commit together: a day recorded as checked has told finance.
    const finished = await inTransaction(deps.db, async (trx) => {
      await stageReconciliationExceptions(
        trx,
        rows.map((row) => row.exception),
      );
      return finishBalanceCheck(trx, day, claim, outcome);
    });
    if (!finished) {
      log.warn(
        `balance check ${day}: a forced run took the day over while this one ran; the day's row is that run's`,
      );
    }
    deps.metrics.reconciliations.inc(
      { status: 'balance_mismatch', commitment: 'confirmed' },
      mismatches.length,
    );
    deps.metrics.balanceCheckMismatches.set(mismatches.length);
    deps.metrics.balanceCheckLastRun.set(Math.floor(Date.now() / 1000));
    const summary = `balance check ${day}: ${outcome.accounts} token account(s) compared in ${seconds(started)} s`;
    if (mismatches.length > 0) {
      log.warn(
        `${summary}; ${mismatches.length} differ from the ledger (balance_mismatch):\n${rows.map((row) => `  ${row.exception.detail}`).join('\n')}`,
      );
    } else {
      log.info(
        `${summary}; the ledger matches the chain${outcome.moving > 0 ? ` (${outcome.moving} still moving, not judged)` : ''}`,
      );
    }
    return outcome;
  } catch (error) {
    // Given back: the scheduler (or another indexer process) runs the day again.
    await releaseBalanceCheck(deps.db, day, claim).catch(() => {});
    throw error;
  }
}

interface Difference {
  row: FollowedBalanceRow;
  chainUnits: bigint;
}

/** The exception and ClickHouse row of a token account that differed twice, the same way. */
function balanceMismatchRow(
  day: string,
  { row, chainUnits }: Difference,
  checkedAt: Date,
): { clickhouse: Record<string, unknown>; exception: ReconciliationException } {
  // One per token account and day: finance is told again on a later day the difference persists.
  const key = `balance-check:${day}:${row.tokenAccount}`;
  const unit = row.currency === 'usdc' ? 'micro-USD' : 'native base units';
  const detail =
    `@${row.handle}'s ${row.currency === 'usdc' ? 'USDC' : 'native'} token account ${row.tokenAccount} holds ` +
    `${chainUnits} ${unit} on chain; the ledger says ${row.ledgerUnits} (balance + pending)`;
  return {
    clickhouse: {
      movement_id: NIL_UUID,
      signature: key,
      ledger_day: day,
      status: 'balance_mismatch',
      ledger_amount: row.ledgerUnits.toString(),
      chain_amount: chainUnits.toString(),
      commitment: 'confirmed',
      detail,
      checked_at: clickhouseTime(checkedAt),
    },
    exception: {
      signature: key,
      verdict: 'balance_mismatch',
      ledgerAmountMicro: row.ledgerUnits,
      chainAmountMicro: chainUnits,
      detail,
    },
  };
}

interface EncodedAccount {
  data: [string, string];
}

/**
 * The token amount of each address at `confirmed` (getMultipleAccounts, 100 a call, a few in
 * flight, retried with backoff); an address with no account holds 0. A token account's amount is
 * the little-endian u64 at byte 64 of its data (after the mint and the owner). These addresses are
 * associated token accounts, which only the token program can hold.
 */
async function chainAmounts(rpc: RpcClient, addresses: readonly string[]): Promise<Map<string, bigint>> {
  const amounts = new Map<string, bigint>();
  const chunks: string[][] = [];
  for (let from = 0; from < addresses.length; from += ACCOUNTS_PER_CALL) {
    chunks.push(addresses.slice(from, from + ACCOUNTS_PER_CALL));
  }
  let next = 0;
  const lane = async () => {
    for (let k = next++; k < chunks.length; k = next++) {
      const chunk = chunks[k]!;
      const { value } = await withBackoff(() =>
        rpc.call<{ value: Array<EncodedAccount | null> }>('getMultipleAccounts', [
          chunk,
          { encoding: 'base64', commitment: 'confirmed' },
        ]),
      );
      chunk.forEach((address, i) => {
        const account = value[i];
        const data = account ? Buffer.from(account.data[0], 'base64') : undefined;
        amounts.set(address, data && data.length >= 72 ? data.readBigUInt64LE(64) : 0n);
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(CALLS_IN_FLIGHT, chunks.length) }, lane));
  return amounts;
}

const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1);

/**
 * When the scheduled check is next due: the first occurrence of `hourUtc`:00 UTC after `start` (a
 * process started past the hour, as every test is, does not check at once), then each day at or
 * after that hour (the day's balance_checks row says whether it ran).
 */
export function firstBalanceCheckAt(start: Date, hourUtc: number): Date {
  const at = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate(), hourUtc));
  if (at.getTime() <= start.getTime()) at.setUTCDate(at.getUTCDate() + 1);
  return at;
}

/** Whether a check is due at `now`: past the first run's time and at or past the day's hour. */
export function balanceCheckDue(now: Date, firstAt: Date, hourUtc: number): boolean {
  return now.getTime() >= firstAt.getTime() && now.getUTCHours() >= hourUtc;
}
