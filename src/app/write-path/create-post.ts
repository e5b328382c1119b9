import { randomUUID } from 'node:crypto';
import { PublicKey } from '@solana/web3.js';
import { committedPostRow, insertPost, postAuthorWallet } from '../../adapters/postgres/posts.repository.js';
import { AppError } from '../../domain/errors.js';
import { paidEngagementLegs } from '../../domain/ledger/ledger.js';
import { validatePostDraft, type PostInput, type PostType } from '../../domain/posts/post-rules.js';
import { notifyCommitted, type LiveNoticeDeps } from '../commit-notifier.js';
import { awaitPaid, type AwaitPaymentDeps, type Paid } from './await-payment.js';
import { resumedId, type IdempotencyClaim } from './idempotency-keys.js';
import {
  commitPaidWrite,
  committedPayment,
  keyedWrite,
  signUsdcPayment,
  walletSigner,
} from './payment-transaction.js';
import type { WritePathDeps } from './write-path-deps.js';
import type { SignedOutboxRow } from '../../adapters/redis/payments-queue.js';

export interface CreatedPost {
  id: string;
  type: PostType;
  content: string;
  authorId: string;
  /** The post replied to (reply) or quoted (quote); null for a plain post. */
  referenceId: string | null;
  createdAt: Date;
  costMicro: bigint;
  chainTransactionId: string;
  swapTx: string;
  /** The outbox row as this commit wrote it (absent on a resumed key): handed off with it. */
  signed?: SignedOutboxRow | undefined;
}

/**
 * A paid post, reply or quote ($1), as REST and GraphQL call it: the post committed (commitPost),
 * its payment awaited up to WRITE_TIMEOUT_MS, and then subscribers told (commit-notifier.ts). The
 * answer does not wait for the live update: it is best effort (a failure is logged) and gathered
 * with the publishes of the next milliseconds (gathered-publish.ts).
 */
export async function createPost(
  deps: AwaitPaymentDeps & LiveNoticeDeps,
  authorId: string,
  input: PostInput,
  idempotency?: IdempotencyClaim,
): Promise<Paid<CreatedPost>> {
  const post = await awaitPaid(deps, await commitPost(deps, authorId, input, idempotency));
  notifyCommitted(deps, { kind: 'post-paid', id: post.id, referenceId: post.referenceId });
  return post;
}

/**
 * The commit alone, without the payment wait or the live update: for tests that drive the payment
 * themselves. One Postgres statement commits the ledger movement (the $1 leaves
 * the author at once: a conditional debit, so concurrent posts cannot overspend), the post, the
 * signed Solana transaction in the outbox and the domain event. Nothing is sent here: the payments
 * worker sends from the outbox, so a crash after this commit loses nothing and charges once.
 *
 * `idempotency`: the request's Idempotency-Key (REST or GraphQL): the commit records the post on the key, or
 * fails with 409 if a retry took the key over; resuming a dead request's key answers with the post
 * its commit recorded.
 */
export async function commitPost(
  deps: WritePathDeps,
  authorId: string,
  input: PostInput,
  idempotency?: IdempotencyClaim,
): Promise<CreatedPost> {
  const resumed = resumedId(idempotency, 'post');
  const committed = resumed ? await committedPost(deps, resumed) : undefined;
  if (committed) return committed;
  const draft = validatePostDraft(input);
  let referenceAuthor: { id: string; wallet: string } | undefined;
  if (draft.referenceId) {
    const referenced = await postAuthorWallet(deps.db, draft.referenceId);
    if (!referenced) throw new AppError('not_found', `No post ${draft.referenceId}`);
    referenceAuthor = { id: referenced.authorId, wallet: referenced.authorWallet ?? '' };
  }

  const legs = paidEngagementLegs(authorId, referenceAuthor?.id);
  const platform = await deps.bootstrapChain();
  const payer = await walletSigner(deps.db, deps.keystore, authorId);
  const postId = randomUUID();
  const share = legs.find((leg) => leg.account.kind === 'user' && leg.units > 0n)?.units ?? 0n;
  const treasuryShare = legs.find((leg) => leg.account.kind === 'treasury')!.units;
  const payment = await signUsdcPayment(deps.rpc, platform, {
    from: payer,
    to: [
      { owner: platform.signers.treasury.publicKey, amountMicro: treasuryShare },
      ...(share > 0n && referenceAuthor
        ? [{ owner: new PublicKey(referenceAuthor.wallet), amountMicro: share }]
        : []),
    ],
    memo: `ledgerfeed:${draft.type}:${postId}`,
  });

  const cost = -legs[0]!.units;
  const eventType =
    draft.type === 'post' ? 'post.created' : draft.type === 'reply' ? 'post.replied' : 'post.quoted';
  const { chainTransactionId, row, signed } = await commitPaidWrite<{ created_at: Date }>(deps.db, {
    movement: { kind: 'post', legs, pending: 'hold' },
    row: (movementId) =>
      insertPost(
        deps.db,
        {
          id: postId,
          authorId,
          type: draft.type,
          content: draft.content,
          parentId: draft.type === 'reply' ? (draft.referenceId ?? null) : null,
          quotedPostId: draft.type === 'quote' ? (draft.referenceId ?? null) : null,
        },
        movementId,
      ),
    payment,
    event: {
      type: eventType,
      actor_id: authorId,
      post_id: postId,
      amount_micro: cost,
      // The post replied to or quoted: analytics count the engagement on it.
      ...(draft.referenceId ? { payload: JSON.stringify({ target_post_id: draft.referenceId }) } : {}),
    },
    idempotency: keyedWrite(idempotency, 'post', postId),
  });
  notifyCommitted(deps, { kind: 'post-shown', authorId, referenceId: draft.referenceId ?? null });
  return {
    id: postId,
    type: draft.type,
    content: draft.content,
    authorId,
    referenceId: draft.referenceId ?? null,
    createdAt: row.created_at,
    costMicro: cost,
    chainTransactionId,
    swapTx: payment.signature,
    signed,
  };
}

/**
 * The post a dead request committed under the key being resumed, as commitPost returned it;
 * undefined when its payment failed on chain and was reversed (nothing stayed charged: write anew).
 * Its change signals go again: the request may have died before sending them.
 */
async function committedPost(deps: WritePathDeps, postId: string): Promise<CreatedPost | undefined> {
  const post = await committedPostRow(deps.db, postId);
  const payment = await committedPayment(deps.db, post.movement_id);
  if (payment.failed) return undefined;
  const referenceId = post.parent_id ?? post.quoted_post_id;
  notifyCommitted(deps, { kind: 'post-shown', authorId: post.author_id, referenceId });
  return {
    id: post.id,
    type: post.type,
    content: post.content,
    authorId: post.author_id,
    referenceId,
    createdAt: post.created_at,
    costMicro: payment.debitMicro,
    chainTransactionId: payment.chainTransactionId,
    swapTx: payment.swapTx,
  };
}
