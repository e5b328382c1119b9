import { Kind, type FieldNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import type { Paid } from '../../../app/write-path/await-payment.js';
import { createPost, type CreatedPost } from '../../../app/write-path/create-post.js';
import type { Account } from '../../../domain/accounts/account.js';
import { AppError } from '../../../domain/errors.js';
import { parsePostId } from '../../../domain/posts/engagement-rules.js';
import type { PostAuthor, PostView } from '../../../domain/posts/post-read-model.js';
import { builder } from '../builder.js';
import { IDEMPOTENCY_KEY_ARG_DESCRIPTION, runPaidMutation } from '../paid-mutation-key.js';
import { AccountRef } from './account.js';
import { PaymentStatus } from './payment-status.js';
import { accountLoader, likedLoader, postLoader, trendingScoreLoader } from './post-loaders.js';

export const PostTypeEnum = builder.enumType('PostType', {
  values: { POST: { value: 'post' }, REPLY: { value: 'reply' }, QUOTE: { value: 'quote' } } as const,
});

/**
 * A post as the read path shows it (REST GET /posts/{id}), with its thread context as fields: a
 * nested post has its own `parent` and `quotedPost`, loaded on demand. Posts whose payment failed
 * on chain are never returned (null where a field points at one).
 */
export const PostRef = builder.objectRef<PostView>('Post');

PostRef.implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    type: t.field({ type: PostTypeEnum, resolve: (post) => post.type }),
    content: t.exposeString('content'),
    author: t.field({
      type: AccountRef,
      // The page's own statement already read the author's handle, display name, avatar and
      // wallet: only a selection beyond those (bio, socialUsername, createdAt) loads the account.
      resolve: (post, _args, ctx, info) =>
        selectsOnlyPageAuthorFields(info) ? pageAuthor(post.author) : accountLoader(ctx).load(post.author.id),
    }),
    likeCount: t.exposeInt('likeCount'),
    replyCount: t.exposeInt('replyCount', { description: 'Replies whose payment did not fail.' }),
    repostCount: t.exposeInt('repostCount', { description: 'Reposts whose payment did not fail.' }),
    quoteCount: t.exposeInt('quoteCount', { description: 'Quotes whose payment did not fail.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    parent: t.field({
      type: PostRef,
      nullable: true,
      description: 'For a reply: the post replied to; null otherwise or when it is not shown.',
      resolve: (post, _args, ctx) => (post.parentId ? postLoader(ctx).load(post.parentId) : null),
    }),
    quotedPost: t.field({
      type: PostRef,
      nullable: true,
      description: 'For a quote: the post quoted; null otherwise or when it is not shown.',
      resolve: (post, _args, ctx) => (post.quotedPostId ? postLoader(ctx).load(post.quotedPostId) : null),
    }),
    viewerHasLiked: t.boolean({
      description: 'Whether the account behind the API key liked the post.',
      resolve: (post, _args, ctx) => likedLoader(ctx).load(post.id),
    }),
    trendingScore: t.float({
      nullable: true,
      description: 'Score in the current trending snapshot; null when the post is not ranked in it.',
      resolve: (post, _args, ctx) => trendingScoreLoader(ctx).load(post.id),
    }),
  }),
});

/**
 * Account fields an author as the page read it (PostAuthor) can answer: the author's own columns,
 * and fields that load by id or handle (counts, follow lists, timeline). Any other field, including
 * one added later, loads the whole account.
 */
const PAGE_AUTHOR_FIELDS: ReadonlySet<string> = new Set([
  '__typename',
  'handle',
  'displayName',
  'avatarUrl',
  'walletAddress',
  'followerCount',
  'followingCount',
  'postCount',
  'followers',
  'following',
  'posts',
]);

/** Per field node of a (cached, reused) document: whether its selection stays within PAGE_AUTHOR_FIELDS. */
const pageAuthorSelections = new WeakMap<FieldNode, boolean>();

function selectsOnlyPageAuthorFields(info: GraphQLResolveInfo): boolean {
  const [first] = info.fieldNodes;
  if (!first) return false;
  const known = info.fieldNodes.length === 1 ? pageAuthorSelections.get(first) : undefined;
  if (known !== undefined) return known;
  const seen = new Set<string>();
  const within = (selections: SelectionSetNode | undefined): boolean =>
    (selections?.selections ?? []).every((selection) => {
      if (selection.kind === Kind.FIELD) return PAGE_AUTHOR_FIELDS.has(selection.name.value);
      if (selection.kind === Kind.INLINE_FRAGMENT) return within(selection.selectionSet);
      const name = selection.name.value;
      if (seen.has(name)) return true;
      seen.add(name);
      return within(info.fragments[name]?.selectionSet);
    });
  const result = info.fieldNodes.every((node) => within(node.selectionSet));
  if (info.fieldNodes.length === 1) pageAuthorSelections.set(first, result);
  return result;
}

/**
 * The author as the page read it, typed as the Account it stands in for: only PAGE_AUTHOR_FIELDS
 * are resolved on it (selectsOnlyPageAuthorFields), and those read id, handle, displayName,
 * avatarUrl and walletAddress, which PostAuthor has.
 */
const pageAuthor = (author: PostAuthor): Account => author as unknown as Account;

builder.queryFields((t) => ({
  post: t.field({
    type: PostRef,
    nullable: true,
    description: 'One post by id (REST GET /posts/{id}); null when none is shown. Needs `read`.',
    authScopes: { read: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      let postId: string;
      try {
        postId = parsePostId(String(id));
      } catch (error) {
        // Not a UUID names no post: null, as `user` answers for an unknown handle.
        if (error instanceof AppError && error.code === 'not_found') return null;
        throw error;
      }
      return postLoader(ctx).load(postId);
    },
  }),
}));

/*
 * Writing a post: the twin of REST POST /posts (same use case, payment wait, scope and rate-limit
 * bucket); `status` says how far the payment had got within WRITE_TIMEOUT_MS.
 */

const PaidPost = builder.objectRef<Paid<CreatedPost>>('PaidPost').implement({
  description: 'A post, reply or quote just paid for ($1).',
  fields: (t) => ({
    id: t.exposeID('id'),
    type: t.field({ type: PostTypeEnum, resolve: (post) => post.type }),
    content: t.exposeString('content'),
    costUsdMicro: t.field({ type: 'MicroUsd', resolve: (post) => post.costMicro }),
    swapTx: t.string({
      description: 'The landed signature of the USDC payment.',
      resolve: (post) => post.landedSwapTx,
    }),
    status: t.field({ type: PaymentStatus, resolve: (post) => post.settled }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const CreatePostInput = builder.inputType('CreatePostInput', {
  fields: (t) => ({
    content: t.string({
      required: true,
      description:
        'Non-empty after trimming; at most 1,000 characters. Tab, line feed and CRLF are allowed; no other control characters (U+0000-U+001F, U+007F-U+009F) and no bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069).',
    }),
    type: t.field({ type: PostTypeEnum, required: true }),
    parentId: t.id({ description: 'The post replied to (reply only).' }),
    quotedPostId: t.id({ description: 'The post quoted (quote only).' }),
  }),
});

builder.mutationFields((t) => ({
  createPost: t.field({
    type: PaidPost,
    description: 'Post, reply or quote ($1 USDC). Needs `post`.',
    authScopes: { post: true },
    rateLimit: 'post',
    args: {
      input: t.arg({ type: CreatePostInput, required: true }),
      idempotencyKey: t.arg.string({ description: IDEMPOTENCY_KEY_ARG_DESCRIPTION }),
    },
    resolve: async (_root, args, ctx, info) => {
      const { input } = args;
      return runPaidMutation(ctx, info, args, (claim) =>
        createPost(
          ctx.deps,
          ctx.viewer!.accountId,
          {
            content: input.content,
            type: input.type,
            parentId: input.parentId ? String(input.parentId) : null,
            quotedPostId: input.quotedPostId ? String(input.quotedPostId) : null,
          },
          claim,
        ),
      );
    },
  }),
}));
