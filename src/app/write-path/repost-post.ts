import { randomUUID } from 'node:crypto';
import { PublicKey } from '@solana/web3.js';
import { recordMovement } from '../../adapters/postgres/ledger.repository.js';
import { postAuthorWallet } from '../../adapters/postgres/posts.repository.js';
import {
  committedRepostRow,
  deleteRepost,
  existingRepost,
  insertRepost,
} from '../../adapters/postgres/reposts.repository.js';
import { inTransaction } from '../../adapters/postgres/unit-of-work.js';
import type { PlatformChain } from '../../adapters/solana/index.js';
import { paidEngagementLegs, type Leg } from '../../domain/ledger/ledger.js';
import { alreadyReposted, parsePostId, unknownPost } from '../../domain/posts/engagement-rules.js';
import { notifyCommitted, type LiveNoticeDeps } from '../commit-notifier.js';
import { awaitPaid, type AwaitPaymentDeps, type Paid } from './await-payment.js';
import type { WritePathDeps } from './write-path-deps.js';
import { resumedId, type IdempotencyClaim } from './idempotency-keys.js';
import {
  committedPayment,
  insertOutboxPayment,
  keyedWrite,
  signUsdcPayment,
  walletSigner,
} from './payment-transaction.js';

export interface CreatedRepost {
  id: string;
  /** The original post. */
  repostOf: string;
  costMicro: bigint;
  chainTransactionId: string;
  swapTx: string;
}

/** Name of the UNIQUE (reposter_id, post_id) constraint (schema/postgres/2026_11_22_5_reposts_likes.ts). */
const REPOST_ONCE_CONSTRAINT = 'reposts_once_per_account';
const UNIQUE_VIOLATION = '23505';

/**
 * A paid repost ($1), once per post, as REST and GraphQL call it: the repost committed
 * (commitRepost), its payment awaited up to WRITE_TIMEOUT_MS, and the post's new repost count
 * published (best effort, not awaited; as for a post, createPost).
 */
export async function repostPost(
  deps: AwaitPaymentDeps & LiveNoticeDeps,
  reposterId: string,
  rawPostId: unknown,
  idempotency?: IdempotencyClaim,
): Promise<Paid<CreatedRepost>> {
  const repost = await awaitPaid(deps, await commitRepost(deps, reposterId, rawPostId, idempotency));
  notifyCommitted(deps, { kind: 'repost-paid', postId: repost.repostOf });
  return repost;
}

/**
 * The commit alone, without the payment wait or the live update: for tests that drive the payment
 * themselves. Written like a paid post (commitPost): one Postgres transaction holds
 * the ledger movement (kind 'repost'; the original author earns 50% unless the reposter is the
 * author), the repost row, the signed Solana transaction in the outbox and the 'post.reposted'
 * event. The payments worker sends it.
 *
 * One repost per account and post: a second is 409 before anything is signed; two racing
 * requests both pass that check, and the UNIQUE constraint fails the later commit, whose
 * movement and outbox row roll back with it (no money moves, nothing is ever sent). A repost
 * whose payment failed on chain (refunded by the worker) does not count: it may be tried again.
 *
 * `idempotency` (REST's or GraphQL's Idempotency-Key): as for a paid post (commitPost).
 */
export async function commitRepost(
  deps: WritePathDeps,
  reposterId: string,
  rawPostId: unknown,
  idempotency?: IdempotencyClaim,
): Promise<CreatedRepost> {
  const resumed = resumedId(idempotency, 'repost');
  const committed = resumed ? await committedRepost(deps, resumed) : undefined;
  if (committed) return committed;
  const postId = parsePostId(rawPostId);
  const original = await postAuthorWallet(deps.db, postId);
  if (!original) throw unknownPost(postId);
  const previous = await existingRepost(deps.db, reposterId, postId);
  if (previous && previous.status !== 'failed') throw alreadyReposted(postId);

  const legs = paidEngagementLegs(reposterId, original.authorId);
  const platform = await deps.bootstrapChain();
  const payer = await walletSigner(deps.db, deps.keystore, reposterId);
  const repostId = randomUUID();
  const payment = await signUsdcPayment(deps.rpc, platform, {
    from: payer,
    to: legs
      .filter((leg) => leg.units > 0n)
      .map((leg) => ({ owner: ownerOf(leg, platform, original), amountMicro: leg.units })),
    memo: `ledgerfeed:repost:${repostId}`,
  });

  const cost = -legs[0]!.units;
  try {
    const created = await inTransaction(deps.db, async (tx) => {
      const { movementId } = await recordMovement(tx, { kind: 'repost', legs, pending: 'hold' });
      if (previous) {
        // Its payment failed and was reversed: the row makes way for this attempt.
        await deleteRepost(tx, previous.id);
      }
      await insertRepost(tx, { id: repostId, reposterId, postId, movementId });
      const chainTxId = await insertOutboxPayment(
        tx,
        movementId,
        payment,
        {
          type: 'post.reposted',
          actor_id: reposterId,
          post_id: postId,
          amount_micro: cost,
          payload: JSON.stringify({ repost_id: repostId }),
        },
        keyedWrite(idempotency, 'repost', repostId),
      );
      return {
        id: repostId,
        repostOf: postId,
        costMicro: cost,
        chainTransactionId: chainTxId,
        swapTx: payment.signature,
      };
    });
    notifyCommitted(deps, { kind: 'repost-shown', postId, reposterId });
    return created;
  } catch (error) {
    const pgError = error as { code?: string; constraint?: string };
    if (pgError.code === UNIQUE_VIOLATION && pgError.constraint === REPOST_ONCE_CONSTRAINT) {
      throw alreadyReposted(postId); // a concurrent twin committed first; ours rolled back whole
    }
    throw error;
  }
}

/**
 * The repost a dead request committed under the key being resumed, as commitRepost returned it;
 * undefined when its payment failed on chain and was reversed (or a later attempt replaced it):
 * nothing stayed charged, write anew. Its change signals go again (the request may have died
 * before sending them).
 */
async function committedRepost(deps: WritePathDeps, repostId: string): Promise<CreatedRepost | undefined> {
  const repost = await committedRepostRow(deps.db, repostId);
  if (!repost) return undefined;
  const payment = await committedPayment(deps.db, repost.movement_id);
  if (payment.failed) return undefined;
  notifyCommitted(deps, { kind: 'repost-shown', postId: repost.post_id, reposterId: repost.reposter_id });
  return {
    id: repost.id,
    repostOf: repost.post_id,
    costMicro: payment.debitMicro,
    chainTransactionId: payment.chainTransactionId,
    swapTx: payment.swapTx,
  };
}

/** The wallet a credited leg pays on chain: the treasury, or the original author. */
function ownerOf(
  leg: Leg,
  platform: PlatformChain,
  original: { authorId: string; authorWallet: string | null },
): PublicKey {
  if (leg.account.kind === 'treasury') return platform.signers.treasury.publicKey;
  if (leg.account.kind === 'user' && leg.account.accountId === original.authorId && original.authorWallet) {
    return new PublicKey(original.authorWallet);
  }
  throw new Error(`a repost leg with no wallet to pay: ${JSON.stringify(leg.account)}`);
}
