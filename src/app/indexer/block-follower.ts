import type { Logger } from 'pino';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import {
  accountHandles,
  anyWalletExists,
  creditsOf,
  creditedMovementsInBlock,
  deleteFollowedBlock,
  hasFinalizedCredits,
  followedBlock,
  insertDepositCredits,
  insertFollowedBlocks,
  insertFollowedTransactions,
  moveBlockCursor,
  oldestUnsettledSlot,
  pruneFollowedBlocks,
  pruneFollowedTransactions,
  readBlockCursor,
  releaseHeldDeposits,
  settleCredits,
  unsettledCredits,
  type BlockRef,
  type DepositCreditRow,
  type SeenTransaction,
} from '../../adapters/postgres/block-follower.repository.js';
import { signaturesKnownToLedger } from '../../adapters/postgres/ledger-signatures.repository.js';
import { movementLegs, recordMovement } from '../../adapters/postgres/ledger.repository.js';
import {
  stageReconciliationExceptions,
  type ReconciliationException,
} from '../../adapters/postgres/reconciliation-events.repository.js';
import type { PlatformChain, RpcClient } from '../../adapters/solana/index.js';
import { reversalLegs } from '../../domain/ledger/ledger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { Tx } from '../../adapters/postgres/tx.js';
import { inTransaction } from '../../adapters/postgres/unit-of-work.js';
import {
  finalizedBlockhashes,
  newestConfirmedBlock,
  PRUNED,
  readBlocks,
  readTips,
  toFetched,
  type ChainBlock,
  type ReadStop,
} from './block-reader.js';
import { recordTransactions, type FetchedTransaction } from './chain-reader.js';
import { FollowedAccounts, type OurTokenAccount } from './followed-accounts.js';
import { unexplainedRow } from './unexplained-outflow.js';
import { followWallets } from './wallet-follower.js';
import type { LedgerStore } from '../../domain/ledger/ledger-store.port.js';

export interface BlockFollowerDeps {
  db: Db;
  clickhouse: ClickHouse;
  rpc: RpcClient;
  metrics: Metrics;
  ledger: LedgerStore;
  logger: Logger;
  bootstrapChain(): Promise<PlatformChain>;
}

export interface BlockFollowerOptions {
  /** Blocks read per round at most (a round commits once). @defaultValue 100 */
  blocksPerRound?: number;
}

/** What one round did. */
export interface FollowStep {
  /** Blocks passed (the cursor moved over them). */
  blocks: number;
  /** Deposit movements credited (confirmed, held until finalized). */
  deposits: number;
  /** Deposit movements made spendable (their block finalized). */
  finalized: number;
  /** Deposit movements reversed (their block dropped by a fork). */
  reversed: number;
  /** Transactions that moved USDC out of our wallets without the ledger. */
  unexplained: number;
  /** Why reading stopped early: a block not available yet (-32004), ... read again next round. */
  stoppedBy?: ReadStop | 'discontinuous';
  /** The cursor's block was dropped by a fork this round (walked back one block). */
  fork: boolean;
  /** A per-address sweep ran this round, and why. */
  sweep?: 'start' | 'pruned';
  /** More blocks wait: run again at once. */
  more: boolean;
}

/** A round that did nothing (yet). */
export function nothingDone(): FollowStep {
  return { blocks: 0, deposits: 0, finalized: 0, reversed: 0, unexplained: 0, fork: false, more: false };
}

export interface BlockFollower {
  step(): Promise<FollowStep>;
}

/** Outbox transactions seen in blocks are kept this long for the reconciler (it judges them within seconds). */
const SEEN_TRANSACTIONS_KEPT_MS = 60 * 60_000;
/** How often the deposits waiting for finalization are looked up in Postgres (see settle). */
const UNSETTLED_READ_MS = 5_000;
/** Keep this many slots of followed blocks below finalized (a fork never reaches them). */
const KEEP_BELOW_FINALIZED = 150;

/**
 * The block follower (issue 52): follows the chain block by block from one cursor (slot and
 * blockhash, in Postgres) instead of listing every address's signatures. Each round reads the
 * confirmed blocks after the cursor (`transactionDetails: accounts`), checks that each one's
 * parent is the block before it (a gap is accepted only where getBlocksWithLimit lists no block;
 * a block not readable yet stops the round there: read again, never skipped), matches their token
 * balances against the set of our token accounts held in memory, and commits in one Postgres
 * transaction the deposits found (held in `pending`, keyed by signature and token account), the
 * exceptions and the cursor. Deposits become spendable when their block is finalized (checked by
 * blockhash); a block a fork dropped is walked back over and its deposits reversed, never having
 * been spendable. Cost per round: two RPC requests and one Postgres transaction, whatever the
 * number of accounts followed.
 */
export function createBlockFollower(
  deps: BlockFollowerDeps,
  options: BlockFollowerOptions = {},
): BlockFollower {
  const blocksPerRound = options.blocksPerRound ?? 100;
  const rpc = countingRpc(deps.rpc, deps.metrics);
  let accounts: FollowedAccounts | undefined;
  /**
   * The oldest slot holding a deposit not finalized yet (null: none), as last read or credited here;
   * read again every UNSETTLED_READ_MS, since another indexer process may have credited one.
   */
  let oldestUnsettled: number | null = null;
  let unsettledReadAt = 0;
  let prunedBelow = 0;
  /** The cursor as this process last committed it (read again after another moved it). */
  let known: BlockRef | null = null;

  async function step(): Promise<FollowStep> {
    const platform = await deps.bootstrapChain();
    accounts ??= new FollowedAccounts(deps.db, platform);
    const refreshed = await accounts.refresh();
    deps.metrics.followedAccounts.set(accounts.size);
    const outcome = nothingDone();

    const cursor = known ?? (known = await readBlockCursor(deps.db));
    if (!cursor) {
      outcome.sweep = await startFollowing(null, 'start');
      return { ...outcome, more: true };
    }
    const tips = await readTips(rpc, cursor.slot, blocksPerRound);
    deps.metrics.followerSlotLag.set(
      { commitment: 'finalized' },
      Math.max(0, tips.finalizedSlot - cursor.slot),
    );
    if (cursor.slot + 1 < tips.firstAvailableBlock) {
      outcome.sweep = await startFollowing(cursor, 'pruned');
      return { ...outcome, more: true };
    }

    const { blocks, stoppedBy } = await readBlocks(rpc, tips.blockSlots);
    if (stoppedBy) outcome.stoppedBy = stoppedBy;
    const passed: ChainBlock[] = [];
    let previous: BlockRef = cursor;
    for (const block of blocks) {
      if (block.parentSlot === previous.slot && block.previousBlockhash === previous.blockhash) {
        passed.push(block);
        previous = block;
        continue;
      }
      // The first block after the cursor names another parent at or before it: the cursor's block
      // is not on the chain any more. Anything else (a parent after the block before it, which the
      // listing did not give) is read again next round.
      if (passed.length === 0 && block.parentSlot <= cursor.slot) outcome.fork = true;
      else outcome.stoppedBy = 'discontinuous';
      break;
    }
    if (passed.length > 0) Object.assign(outcome, await passBlocks(platform, cursor, passed, accounts));
    if (outcome.fork) outcome.reversed += await dropNewestBlock(cursor);
    const lastSlot = tips.blockSlots.at(-1);
    deps.metrics.followerSlotLag.set(
      { commitment: 'confirmed' },
      lastSlot === undefined ? 0 : Math.max(0, lastSlot - previous.slot),
    );

    const settled = await settle(tips.finalizedSlot);
    outcome.finalized += settled.finalized;
    outcome.reversed += settled.reversed;
    if (tips.finalizedSlot - KEEP_BELOW_FINALIZED > prunedBelow + 1_000) {
      prunedBelow = tips.finalizedSlot - KEEP_BELOW_FINALIZED;
      await pruneFollowedBlocks(deps.db, prunedBelow);
      await pruneFollowedTransactions(deps.db, SEEN_TRANSACTIONS_KEPT_MS);
    }
    outcome.more =
      refreshed.more ||
      outcome.fork ||
      (passed.length === blocks.length && tips.blockSlots.length === blocksPerRound);
    return outcome;
  }

  /**
   * Starts (again) from the newest confirmed block, after a per-address sweep over every wallet
   * for what came before it: when there is no cursor yet and wallets exist (their deposits before
   * now), and when the chain no longer has the blocks after the cursor (pruned past it). The block
   * is taken before the sweep, so nothing between the two is missed (what both see is credited
   * once: the sweep keys deposits by signature too).
   */
  async function startFollowing(
    cursor: BlockRef | null,
    reason: 'start' | 'pruned',
  ): Promise<'start' | 'pruned' | undefined> {
    const from = await newestConfirmedBlock(rpc);
    const sweep = reason === 'pruned' || (await anyWalletExists(deps.db));
    if (sweep) {
      deps.logger.warn(
        reason === 'pruned'
          ? `block follower: the node no longer has the blocks after slot ${cursor?.slot} (pruned); sweeping every token account's history once, then following from slot ${from.slot}`
          : `block follower: no cursor yet; sweeping every token account's history once, then following from slot ${from.slot}`,
      );
      deps.metrics.followerSweeps.inc({ reason });
      const round = await followWallets(deps);
      deps.logger.info(
        `block follower: the sweep listed ${round.addresses} token account(s) and credited ${round.deposits} deposit(s)`,
      );
    }
    await inTransaction(deps.db, async (trx) => {
      await insertFollowedBlocks(trx, [from]);
      if (!(await moveBlockCursor(trx, cursor, from))) throw new CursorMoved();
    });
    known = { slot: from.slot, blockhash: from.blockhash };
    return sweep ? reason : undefined;
  }

  async function passBlocks(
    platform: PlatformChain,
    cursor: BlockRef,
    blocks: ChainBlock[],
    followed: FollowedAccounts,
  ): Promise<Pick<FollowStep, 'blocks' | 'deposits' | 'unexplained'>> {
    const usdc = platform.usdcMint.toBase58();
    // Where we hold the mints' authorities (the localnet, a private validator), a mint they signed
    // is a faucet's: the faucet credits it (spendable at once: test money), the follower indexes it.
    const faucets = new Set(
      platform.mintsTestTokens
        ? [platform.signers.usdc_mint_authority, platform.signers.native_mint_authority].map((k) =>
            k.publicKey.toBase58(),
          )
        : [],
    );
    // Token balances of accounts that may be ours; one look-up for every hit of the round.
    const touching = blocks.flatMap((block) =>
      block.transactions
        .filter((tx) => tx.tokenAccounts.some((account) => followed.mayBeOurs(account)))
        .map((tx) => ({ block, tx })),
    );
    const ours = await followed.resolve(touching.flatMap(({ tx }) => tx.tokenAccounts));
    const relevant = touching.filter(({ tx }) => tx.tokenAccounts.some((account) => ours.has(account)));
    const signatures = relevant.map(({ tx }) => tx.signature);
    const [sources, credited] = await Promise.all([
      signaturesKnownToLedger(deps.db, signatures),
      creditsOf(deps.db, signatures),
    ]);

    const indexed: FetchedTransaction[] = [];
    const payments: SeenTransaction[] = [];
    const unexplainedRows: Array<Record<string, unknown>> = [];
    const exceptions: ReconciliationException[] = [];
    const deposits: Array<{
      signature: string;
      key: string;
      block: ChainBlock;
      credits: Array<{ account: OurTokenAccount & { kind: 'user' }; amount: bigint }>;
    }> = [];
    const now = new Date();
    let handles: Map<string, string> | undefined;
    for (const { block, tx } of relevant) {
      const source = sources.get(tx.signature);
      const mine = credited.get(tx.signature);
      const fetched = toFetched(block, tx);
      // The outbox's transactions are the reconciler's to judge and index: it reads them from here.
      if (source === 'outbox') {
        payments.push({ tx: fetched, blockhash: block.blockhash });
        continue;
      }
      indexed.push(fetched);
      // A deposit the faucets (or a sweep) recorded is indexed only; one this follower credited and
      // a fork did not reverse is not credited again.
      if (source === 'deposit' && !mine) continue;
      if (tx.signers.some((signer) => faucets.has(signer))) continue;
      if (mine && mine.live.size > 0) continue;
      if (tx.err !== null) continue; // landed with an error: no token balance changed
      const changes = fetched.movements
        .filter((movement) => movement.mint === usdc && ours.has(movement.tokenAccount))
        .map((movement) => ({ account: ours.get(movement.tokenAccount)!, amount: movement.amount }));
      const outflows = changes.filter((change) => change.amount < 0n);
      if (outflows.length > 0) {
        handles ??= await handlesOf(deps.db, [...ours.values()]);
        const row = unexplainedRow(
          fetched,
          outflows.map((o) => ({
            label:
              o.account.kind === 'platform'
                ? o.account.role
                : (handles!.get(o.account.accountId) ?? o.account.owner),
            owner: o.account.owner,
            amount: -o.amount,
          })),
          now,
        );
        unexplainedRows.push(row.clickhouse);
        exceptions.push(row.exception);
        deps.metrics.reconciliations.inc({ status: 'unexplained', commitment: 'confirmed' });
        continue;
      }
      const credits = changes.flatMap((change) =>
        change.account.kind === 'user' && change.amount > 0n
          ? [{ account: change.account, amount: change.amount }]
          : [],
      );
      if (credits.length === 0) continue;
      // The first landing is keyed by signature alone (as the faucets key theirs); a landing after
      // a fork reversed the earlier one also by its slot.
      const key =
        mine && mine.reversedLandings > 0
          ? `deposit:${tx.signature}:${block.slot}`
          : `deposit:${tx.signature}`;
      deposits.push({ signature: tx.signature, key, block, credits });
    }

    // ClickHouse first: its rows collapse by key when a crash makes the round run again.
    await recordTransactions(deps.clickhouse, indexed);
    await deps.clickhouse.insertRows('reconciliation', unexplainedRows);
    let credited_ = 0;
    await inTransaction(deps.db, async (trx) => {
      const rows: DepositCreditRow[] = [];
      for (const deposit of deposits) {
        const total = deposit.credits.reduce((sum, credit) => sum + credit.amount, 0n);
        const { movementId, replayed } = await recordMovement(trx, {
          kind: 'deposit',
          idempotencyKey: deposit.key,
          pending: 'hold',
          legs: [
            { account: { kind: 'external' }, units: -total, counts: 'none' },
            ...deposit.credits.map((credit) => ({
              account: { kind: 'user' as const, accountId: credit.account.accountId },
              units: credit.amount,
              counts: 'none' as const,
            })),
          ],
        });
        // Recorded meanwhile by someone else (a sweep): theirs, spendable already.
        if (replayed) continue;
        credited_++;
        for (const credit of deposit.credits) {
          rows.push({
            signature: deposit.signature,
            tokenAccount: credit.account.tokenAccount,
            accountId: credit.account.accountId,
            amount: credit.amount,
            movementId,
            slot: deposit.block.slot,
            blockhash: deposit.block.blockhash,
          });
        }
      }
      await insertDepositCredits(trx, rows);
      await stageReconciliationExceptions(trx, exceptions);
      await insertFollowedTransactions(trx, payments);
      await insertFollowedBlocks(trx, blocks);
      if (!(await moveBlockCursor(trx, cursor, blocks.at(-1)!))) throw new CursorMoved();
    });
    known = { slot: blocks.at(-1)!.slot, blockhash: blocks.at(-1)!.blockhash };
    if (credited_ > 0) {
      const oldest = Math.min(...deposits.map((d) => d.block.slot));
      oldestUnsettled = oldestUnsettled == null ? oldest : Math.min(oldestUnsettled, oldest);
    }
    deps.metrics.followerBlocks.inc(blocks.length);
    deps.metrics.followerDeposits.inc({ stage: 'credited' }, credited_);
    return { blocks: blocks.length, deposits: credited_, unexplained: exceptions.length };
  }

  /**
   * A fork dropped the cursor's block: its deposits are reversed (they were never spendable: a
   * deposit is released only once its block is checked to be the finalized one) and the cursor goes
   * back to its parent; the next round walks back further or follows the new branch. The slot may
   * be below finalized by now (the follower was slow to see the fork): its block is still not the
   * finalized one.
   */
  async function dropNewestBlock(cursor: BlockRef): Promise<number> {
    const reversed = await inTransaction(deps.db, async (trx) => {
      const block = await followedBlock(trx, cursor.slot);
      if (!block)
        throw new Error(
          `a fork dropped slot ${cursor.slot}, and the follower kept no parent to walk back to`,
        );
      // A block whose deposits were made spendable was checked to be the finalized one at its
      // slot: a chain that drops it is not one to follow blindly.
      if (await hasFinalizedCredits(trx, cursor.slot)) {
        throw new Error(
          `the chain dropped block ${cursor.slot} (${cursor.blockhash}), from which deposits were made spendable when it was finalized: stopping for an operator`,
        );
      }
      const movements = await reverseCredits(trx, await creditedMovementsInBlock(trx, cursor.slot));
      await deleteFollowedBlock(trx, cursor.slot);
      const parent = { slot: block.parentSlot, blockhash: block.previousBlockhash };
      if (!(await moveBlockCursor(trx, cursor, parent))) throw new CursorMoved();
      known = parent;
      return movements;
    });
    deps.metrics.followerForks.inc();
    deps.logger.warn(
      `block follower: a fork dropped block ${cursor.slot} (${cursor.blockhash}); walked back to its parent` +
        (reversed > 0 ? `, reversing ${reversed} deposit(s) credited from it (never spendable)` : ''),
    );
    return reversed;
  }

  /** Reverses deposit movements still held (marks their credits reversed); returns how many. */
  async function reverseCredits(trx: Tx, movementIds: readonly string[]): Promise<number> {
    const changed = await settleCredits(trx, movementIds, 'reversed');
    for (const movementId of changed) {
      await recordMovement(trx, {
        kind: 'reversal',
        legs: reversalLegs(await movementLegs(trx, movementId)),
        reverses: movementId,
        idempotencyKey: `reversal:${movementId}`,
        // The credits never left `pending`: the reversal takes them from there.
        pending: 'unhold',
      });
    }
    deps.metrics.followerDeposits.inc({ stage: 'reversed' }, changed.length);
    return changed.length;
  }

  /**
   * Deposits of blocks now finalized become spendable, once their block is checked to be the
   * finalized one at that slot (by blockhash); a deposit whose block is not is reversed.
   */
  async function settle(finalizedSlot: number): Promise<{ finalized: number; reversed: number }> {
    if (Date.now() - unsettledReadAt > UNSETTLED_READ_MS) {
      unsettledReadAt = Date.now();
      oldestUnsettled = await oldestUnsettledSlot(deps.db);
    }
    if (oldestUnsettled === null || oldestUnsettled > finalizedSlot) return { finalized: 0, reversed: 0 };
    const due = await unsettledCredits(deps.db, finalizedSlot);
    const hashes = await finalizedBlockhashes(rpc, [...new Set(due.map((d) => d.slot))]);
    // A block the node pruned is older than any fork reaches: the blocks the cursor passed after it
    // descend from it, so it is the finalized one.
    const release = due
      .filter((d) => hashes.get(d.slot) === d.blockhash || hashes.get(d.slot) === PRUNED)
      .map((d) => d.movementId);
    const drop = due
      .filter(
        (d) => hashes.has(d.slot) && hashes.get(d.slot) !== d.blockhash && hashes.get(d.slot) !== PRUNED,
      )
      .map((d) => d.movementId);
    const outcome = await inTransaction(deps.db, async (trx) => {
      const finalized = await settleCredits(trx, release, 'finalized');
      if (finalized.length > 0) {
        await releaseHeldDeposits(trx, finalized);
      }
      return { finalized: finalized.length, reversed: await reverseCredits(trx, drop) };
    });
    if (outcome.reversed > 0) {
      deps.logger.error(
        `block follower: ${outcome.reversed} deposit(s) credited from blocks the finalized chain does not hold were reversed`,
      );
    }
    deps.metrics.followerDeposits.inc({ stage: 'finalized' }, outcome.finalized);
    oldestUnsettled = await oldestUnsettledSlot(deps.db);
    unsettledReadAt = Date.now();
    return outcome;
  }

  return {
    step: async () => {
      try {
        return await step();
      } catch (error) {
        known = null; // read the cursor again: another follower may have moved it
        // Two indexers follow the same cursor: the one that lost the race reads again at once.
        if (error instanceof CursorMoved) {
          return { ...nothingDone(), more: true };
        }
        throw error;
      }
    },
  };
}

/** Another follower moved the cursor during this round: nothing of the round is committed. */
export class CursorMoved extends Error {
  override name = 'CursorMoved';
  constructor() {
    super(
      'another block follower moved the cursor during this round; its work is rolled back and done again',
    );
  }
}

/** `@handle` per user account among `accounts` (for an exception's detail). */
function handlesOf(db: Db, accounts: readonly OurTokenAccount[]): Promise<Map<string, string>> {
  return accountHandles(db, [...new Set(accounts.flatMap((a) => (a.kind === 'user' ? [a.accountId] : [])))]);
}

/** The RPC client, counting the HTTP requests it sends (ledgerfeed_block_follower_rpc_requests_total). */
function countingRpc(rpc: RpcClient, metrics: Metrics): RpcClient {
  return {
    ...rpc,
    call: <T>(method: string, params: readonly unknown[]) => {
      metrics.followerRpcRequests.inc();
      return rpc.call<T>(method, params);
    },
    batch: <T>(calls: Parameters<RpcClient['batch']>[0]) => {
      metrics.followerRpcRequests.inc();
      return rpc.batch<T>(calls);
    },
  };
}
