import { movementLegs, recordMovement } from '../../adapters/postgres/ledger.repository.js';
import { markOutboxFailed, recordOutboxResigned } from '../../adapters/postgres/outbox.repository.js';
import { paidContentOfMovement } from '../../adapters/postgres/posts.repository.js';
import type { Tx } from '../../adapters/postgres/tx.js';
import { inTransaction } from '../../adapters/postgres/unit-of-work.js';
import { isAlreadyProcessed, type ChainError, type SignedForSend } from '../../adapters/solana/index.js';
import { reversalLegs } from '../../domain/ledger/ledger.js';
import { notifyCommitted, type CommitNotice } from '../commit-notifier.js';
import { resignPayment } from './payment-transaction.js';
import { requiredSigners } from './transaction-signers.js';
import type { WritePathDeps } from './write-path-deps.js';
import { outboxWritesFor } from './outbox-writes.js';
import type { SignedOutboxRow } from '../../adapters/redis/payments-queue.js';
import type { OutboxRow } from '../../adapters/postgres/outbox-reads.repository.js';

export type SettlementStatus = 'confirmed' | 'finalized' | 'failed';

export interface SettlementHooks {
  /**
   * The row as its commit wrote it (status `signed`), when the caller has it: the first look uses
   * it instead of reading the row. Safe even if the row moved on since: the send of those bytes is
   * deduped by the chain, and every mark below is guarded by the row's status and signature.
   */
  signed?: SignedOutboxRow | undefined;
  /** The cluster executed the transaction without error (commitment processed; row now 'sent'). */
  onSent?(signature: string): Promise<void>;
}

/**
 * Re-signs allowed in one run of the job. Past it the expiry is thrown like any retryable failure:
 * the queue runs the job again within 60 s (capped backoff, no attempt limit; see
 * paymentRetryDelayMs), so a payment is never abandoned while a re-sign can still land it. Only a
 * failure on chain (program error, invalid transaction) ends it, with its legs reversed.
 */
const MAX_RESIGNS_PER_RUN = 5;

/**
 * Drives one outbox row to its end: send the stored bytes (simulated first), wait until the
 * cluster has executed them ('sent': the paying request may answer now), then until 'confirmed'
 * (the held credits become spendable). The watcher re-sends the same bytes while the blockhash
 * lives (the chain dedupes); a blockhash that expired with nothing landed is re-signed (`swap_tx`
 * moves to the new signature, the old one is kept); a transaction that fails on chain has its
 * ledger legs reversed. Retryable failures (RPC down, timeouts) are thrown for the queue to retry;
 * every step is guarded by the row's status and signature, so it is safe to repeat after a crash.
 */
export async function settlePayment(
  deps: WritePathDeps,
  chainTransactionId: string,
  hooks: SettlementHooks = {},
): Promise<SettlementStatus> {
  for (let resigns = 0; ; resigns++) {
    const row =
      resigns === 0 && hooks.signed
        ? asCommitted(chainTransactionId, hooks.signed)
        : await outboxWritesFor(deps.db).read(chainTransactionId);
    if (row.status === 'confirmed' || row.status === 'finalized' || row.status === 'failed')
      return row.status;
    const tx: SignedForSend = {
      wire: row.wire,
      signature: row.signature,
      lastValidBlockHeight: Number(row.last_valid_block_height),
    };
    const onChainFailure = async (error: ChainError): Promise<'resign' | 'failed'> => {
      if (error.kind === 'blockhash_expired' && resigns < MAX_RESIGNS_PER_RUN) {
        await resign(deps, row.id, row.movement_id, tx);
        return 'resign';
      }
      if (error.kind === 'program_error' || error.kind === 'invalid_transaction') {
        await reverse(deps, row.id, row.movement_id, {
          kind: error.kind,
          message: error.message,
          err: error.err ?? null,
        });
        return 'failed';
      }
      throw error;
    };

    if (row.status === 'signed') {
      const sendError = await deps.watcher.send(tx, {
        skipPreflight: false,
        preflightCommitment: 'confirmed',
      });
      // Already processed: an earlier run sent it. Blockhash unknown: it may have landed long ago;
      // the watcher's history-wide look decides. Anything else is the simulation's verdict.
      if (sendError && !isAlreadyProcessed(sendError) && sendError.kind !== 'blockhash_expired') {
        if ((await onChainFailure(sendError)) === 'failed') return 'failed';
        continue;
      }
      const processed = await deps.watcher.watch(tx, 'processed');
      if (processed.ok) {
        await outboxWritesFor(deps.db).markSent({
          id: row.id,
          signature: tx.signature,
          slot: processed.slot,
        });
        await hooks.onSent?.(tx.signature);
      } else if (processed.error.kind === 'blockhash_expired' || processed.error.retryable) {
        if ((await onChainFailure(processed.error)) === 'failed') return 'failed';
        continue;
      }
      // A failure seen at 'processed' may be a fork's: only 'confirmed' decides a reversal.
    }

    const confirmed = await deps.watcher.watch(tx, 'confirmed');
    if (confirmed.ok) {
      await outboxWritesFor(deps.db).confirm({ id: row.id, signature: tx.signature, slot: confirmed.slot });
      return 'confirmed';
    }
    if ((await onChainFailure(confirmed.error)) === 'failed') return 'failed';
  }
}

async function resign(deps: WritePathDeps, rowId: string, movementId: string, old: SignedForSend) {
  const platform = await deps.bootstrapChain();
  // The keys the stored message requires (fee payer and a user's wallet for a post; the creator
  // fund for a payout batch): the same message signs again under the fresh blockhash.
  const signers = await requiredSigners(deps, platform, old.wire);
  const fresh = await resignPayment(deps.rpc, old.wire, signers);
  // Guarded by the old signature: two workers racing re-sign once. The old signature is kept:
  // the indexer proves it never landed.
  await recordOutboxResigned(deps.db, rowId, old.signature, fresh);
}

/**
 * Failed on chain: nothing moved there, so the ledger movement is undone. Its credits were held
 * (never spendable), so taking them back cannot fail for a recipient who spent money meanwhile.
 */
async function reverse(
  deps: WritePathDeps,
  rowId: string,
  movementId: string,
  failure: Record<string, unknown>,
) {
  const hidden = await inTransaction(deps.db, async (tx) => {
    const marked = await markOutboxFailed(tx, rowId, failure);
    if (!marked) return undefined; // another worker settled it
    const legs = await movementLegs(tx, movementId);
    await recordMovement(tx, {
      kind: 'reversal',
      legs: reversalLegs(legs),
      reverses: movementId,
      idempotencyKey: `reversal:${movementId}`,
      // Credits a vanished payment could not hold again are taken from the spendable balance.
      ...(marked.creditsHeld ? { pending: 'unhold' as const } : {}),
    });
    return hiddenBy(tx, movementId);
  });
  if (hidden) notifyCommitted(deps, hidden);
}

/**
 * What a failed payment hides: its post or its repost. A send, swap or payout shows in no cached
 * read: a notice that names nothing.
 */
async function hiddenBy(
  tx: Tx,
  movementId: string,
): Promise<Extract<CommitNotice, { kind: 'payment-failed' }>> {
  const { post, repost } = await paidContentOfMovement(tx, movementId);
  return {
    kind: 'payment-failed',
    post: post && {
      id: post.id,
      authorId: post.author_id,
      referenceId: post.parent_id ?? post.quoted_post_id,
    },
    repost: repost && { postId: repost.post_id, reposterId: repost.reposter_id },
  };
}

/** What settling reads of a row, as its commit wrote it. */
function asCommitted(
  id: string,
  signed: SignedOutboxRow,
): Pick<OutboxRow, 'id' | 'movement_id' | 'status' | 'wire' | 'signature' | 'last_valid_block_height'> {
  return {
    id,
    movement_id: signed.movementId,
    status: 'signed',
    wire: signed.wire,
    signature: signed.signature,
    last_valid_block_height: BigInt(signed.lastValidBlockHeight),
  };
}
