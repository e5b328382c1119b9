import type { Logger } from 'pino';
import type { LiveEvents } from '../adapters/redis/live-events.js';
import {
  accountCountsKey,
  accountKey,
  handleKey,
  postKey,
  timelineKey,
  type ChangeKey,
  type ChangeSignals,
} from './change-signals.js';
import { POST_CREATED_TOPIC, postCountsTopic, type PostEvent } from './live-updates.js';

/*
 * The one place that tells the outside world about a committed write. Code that committed
 * something describes it as a CommitNotice; the table TOLD below says whom that tells:
 *
 * - the read caches of every process (change keys, change-signals.ts): heard by this process's
 *   caches synchronously, before the write answers, and by other processes through Redis;
 * - the GraphQL subscribers (postCreated, postCountsChanged; topics in live-updates.ts): best
 *   effort and never awaited by the write, since the write is committed and an event is only a
 *   hint (a failed publish is logged).
 *
 * When each notice goes out is the sender's business, written beside each row: a paid post is
 * shown to readers at its commit, but announced to subscribers only once its payment was awaited.
 * Not here: the account event log (webhooks, the `events` stream), whose events commit in the
 * write's own transaction and whose sequencer wakes its readers (events/account-events.ts), and the
 * payments worker's word to the request awaiting a payment (payments-queue.ts).
 */

/** A post whose payment failed on chain: hidden from every read. */
interface HiddenPost {
  id: string;
  authorId: string;
  /** The post it replied to or quoted. */
  referenceId: string | null;
}

export type CommitNotice =
  | { kind: 'post-shown'; authorId: string; referenceId: string | null }
  | { kind: 'post-paid'; id: string; referenceId: string | null }
  | { kind: 'repost-shown'; postId: string; reposterId: string }
  | { kind: 'repost-paid'; postId: string }
  | { kind: 'like-changed'; postId: string }
  | {
      kind: 'payment-failed';
      post: HiddenPost | undefined;
      repost: { postId: string; reposterId: string } | undefined;
    }
  | { kind: 'account-created'; handle: string }
  /** `handle`: the account's new handle, when it was renamed. */
  | { kind: 'account-updated'; accountId: string; handle: string | undefined }
  | { kind: 'follows-changed'; followerId: string; followeeId: string }
  | { kind: 'key-revoked' }
  | { kind: 'trending-rebuilt' };

type Kind = CommitNotice['kind'];
type NoticeOf<K extends Kind> = Extract<CommitNotice, { kind: K }>;
/** The notices subscribers hear of: whoever sends one holds the live events publisher. */
type LiveKind = 'post-paid' | 'repost-paid' | 'like-changed';
export type LiveNotice = NoticeOf<LiveKind>;
/** The notices only the read caches hear of: a CLI command or a worker thread can send these. */
export type CacheNotice = NoticeOf<Exclude<Kind, LiveKind>>;

type LiveEvent = readonly [topic: string, event: PostEvent];
interface Told {
  caches: ChangeKey[];
  live: LiveEvent[];
}

const countsMoved = (postId: string): LiveEvent => [postCountsTopic(postId), { postId }];
const ifSome = <T>(value: T | null | undefined, told: (value: T) => ChangeKey[]): ChangeKey[] =>
  value ? told(value) : [];

/** What each committed write tells whom. The comment of each row: who sends it, and when. */
const TOLD: { [K in Kind]: (notice: NoticeOf<K>) => K extends LiveKind ? Told : Pick<Told, 'caches'> } = {
  // commitPost, at its commit (pending posts are shown; again when a retry resumes the key): the
  // first latest page, the author's timeline and post count, the count of the post replied to or
  // quoted.
  'post-shown': ({ authorId, referenceId }) => ({
    caches: [
      'latest',
      accountCountsKey(authorId),
      timelineKey(authorId),
      ...ifSome(referenceId, (id) => [postKey(id)]),
    ],
  }),
  // createPost, once its payment was awaited (executed, or WRITE_TIMEOUT_MS passed): the caches
  // heard at the commit (post-shown); subscribers hear of the post and of the reference's count.
  'post-paid': ({ id, referenceId }) => ({
    caches: [],
    live: [[POST_CREATED_TOPIC, { postId: id }], ...(referenceId ? [countsMoved(referenceId)] : [])],
  }),
  // commitRepost, at its commit (again when a retry resumes the key): the post's repost count and
  // the reposter's timeline.
  'repost-shown': ({ postId, reposterId }) => ({ caches: [postKey(postId), timelineKey(reposterId)] }),
  // repostPost, once its payment was awaited: the post's repost count, to subscribers.
  'repost-paid': ({ postId }) => ({ caches: [], live: [countsMoved(postId)] }),
  // commitLike, at its commit, when the like state changed (free: there is no payment to await).
  'like-changed': ({ postId }) => ({ caches: [postKey(postId)], live: [countsMoved(postId)] }),
  // The settlement worker, at the commit of the reversal: what the payment's post or repost showed.
  // A hidden post is named by its own key, not `latest` (change-signals.ts). Subscribers are not
  // told: their next load of the post finds it gone.
  'payment-failed': ({ post, repost }) => ({
    caches: [
      ...ifSome(post, ({ id, authorId, referenceId }) => [
        postKey(id),
        accountCountsKey(authorId),
        timelineKey(authorId),
        ...ifSome(referenceId, (reference) => [postKey(reference)]),
      ]),
      ...ifSome(repost, ({ postId, reposterId }) => [postKey(postId), timelineKey(reposterId)]),
    ],
  }),
  // The account store (identity-stores.ts), after the insert: a cached "no such user" must go.
  'account-created': ({ handle }) => ({ caches: [handleKey(handle)] }),
  // The account store, after the update: its profile and author fields, the handle it now answers
  // to, and the API key cache (a viewer carries its account's handle).
  'account-updated': ({ accountId, handle }) => ({
    caches: [accountKey(accountId), 'identity', ...ifSome(handle, (h) => [handleKey(h)])],
  }),
  // The follow store, after a follow or unfollow: both accounts' counts and follow lists.
  'follows-changed': ({ followerId, followeeId }) => ({
    caches: [accountCountsKey(followerId), accountCountsKey(followeeId)],
  }),
  // The API key store or the CLI's `keys revoke`, after the revocation: the key stops at once.
  'key-revoked': () => ({ caches: ['identity'] }),
  // The worker's trending builder, after a new snapshot is in Redis: new ranks and scores.
  'trending-rebuilt': () => ({ caches: ['trending'] }),
};

/** Enough to tell the read caches: every process has this (the CLI's and worker threads' too). */
export interface CacheNoticeDeps {
  changes: Pick<ChangeSignals, 'changed'>;
}

/** Enough to tell subscribers too: the API process's and the worker's deps. */
export interface LiveNoticeDeps extends CacheNoticeDeps {
  liveEvents: Pick<LiveEvents, 'publish'>;
  logger: Pick<Logger, 'warn'>;
}

/**
 * Tells the read caches now (this process's before returning) and starts publishing to
 * subscribers without waiting: the caller's answer never waits for, or fails with, a live event.
 */
export function notifyCommitted(deps: LiveNoticeDeps, notice: CommitNotice): void;
export function notifyCommitted(deps: CacheNoticeDeps, notice: CacheNotice): void;
export function notifyCommitted(deps: CacheNoticeDeps & Partial<LiveNoticeDeps>, notice: CommitNotice): void {
  const told = (TOLD[notice.kind] as (notice: CommitNotice) => Partial<Told>)(notice);
  const live = told.live ?? [];
  // The overloads let only LiveNoticeDeps send a live notice; a cast around them fails here, before
  // anything is told, rather than as an unhandled rejection.
  if (live.length > 0 && !(deps.liveEvents && deps.logger)) {
    throw new Error(`a '${notice.kind}' notice needs the live events publisher`);
  }
  if (told.caches?.length) deps.changes.changed(...told.caches);
  if (live.length > 0) void publishLive(deps as LiveNoticeDeps, live);
}

async function publishLive(deps: LiveNoticeDeps, events: readonly LiveEvent[]): Promise<void> {
  const results = await Promise.allSettled(
    events.map(([topic, event]) => deps.liveEvents.publish(topic, event)),
  );
  for (const result of results) {
    if (result.status === 'rejected') deps.logger.warn({ err: result.reason }, 'live update not published');
  }
}
