import type { LikeState } from '../../domain/posts/engagement-rules.js';
import type { PostInput } from '../../domain/posts/post-rules.js';
import type { SendInput } from '../../domain/sends/send-rules.js';
import { postCountsChanged, postWritten, type LiveUpdatesDeps } from '../live-updates.js';
import { awaitPayment, type AwaitedPayment, type AwaitPaymentDeps } from './await-payment.js';
import { createPaidPost, type CreatedPost } from './create-post.js';
import type { IdempotencyClaim } from './idempotency-keys.js';
import { setLike } from './like-post.js';
import { repostPost, type CreatedRepost } from './repost-post.js';
import { sendUsdc, type CreatedSend } from './send-usdc.js';

/**
 * The write use cases as the transports call them, one call each: the write committed, the wait
 * for its payment (up to WRITE_TIMEOUT_MS), and the live update published once it is committed.
 * REST and GraphQL only map their wire format to these and the result (or AppError) back. The
 * answer does not wait for the live update: it is best effort (a failure is logged) and gathered
 * with the publishes of the next milliseconds (gathered-publish.ts).
 */
export type PaidWriteDeps = AwaitPaymentDeps & LiveUpdatesDeps;

/** A paid write and how far its payment had got when the wait ended. */
export type Paid<T> = T & {
  /** `pending`: not executed within WRITE_TIMEOUT_MS; the worker goes on (answer 202). */
  settled: AwaitedPayment['settled'];
  /** The landed signature: a re-sign after a blockhash expiry changes it. */
  landedSwapTx: string;
};

async function paid<T extends CreatedPost | CreatedRepost | CreatedSend>(
  deps: PaidWriteDeps,
  created: T,
): Promise<Paid<T>> {
  const { settled, swapTx } = await awaitPayment(deps, created);
  return { ...created, settled, landedSwapTx: swapTx };
}

/** A paid post, reply or quote ($1). */
export async function publishPost(
  deps: PaidWriteDeps,
  authorId: string,
  input: PostInput,
  idempotency?: IdempotencyClaim,
): Promise<Paid<CreatedPost>> {
  const post = await paid(deps, await createPaidPost(deps, authorId, input, idempotency));
  void postWritten(deps, post);
  return post;
}

/** A paid repost ($1), once per post. */
export async function publishRepost(
  deps: PaidWriteDeps,
  accountId: string,
  postId: string,
  idempotency?: IdempotencyClaim,
): Promise<Paid<CreatedRepost>> {
  const repost = await paid(deps, await repostPost(deps, accountId, postId, idempotency));
  void postCountsChanged(deps, repost.repostOf);
  return repost;
}

/** USDC to another account. */
export async function sendAndWait(
  deps: PaidWriteDeps,
  senderId: string,
  input: SendInput,
  idempotency?: IdempotencyClaim,
): Promise<Paid<CreatedSend>> {
  return paid(deps, await sendUsdc(deps, senderId, input, idempotency));
}

/** A like (`liked`) or unlike, free and idempotent; the live update only when it changed. */
export async function likePost(
  deps: PaidWriteDeps,
  accountId: string,
  postId: string,
  liked: boolean,
): Promise<LikeState> {
  const state = await setLike(deps, accountId, postId, liked);
  if (state.changed) void postCountsChanged(deps, state.postId);
  return { liked: state.liked, likeCount: state.likeCount };
}
