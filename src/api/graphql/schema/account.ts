import { createContextCache } from '@pothos/core';
import DataLoader from 'dataloader';
import type { Account, AccountMoney, AccountStats } from '../../../domain/accounts/account.js';
import { findByHandle, requireAccount, updateProfile } from '../../../domain/accounts/accounts.service.js';
import { accountCountsKey, accountKey, handleKey } from '../../../app/change-signals.js';
import { normalizeHandle } from '../../../domain/accounts/profile-rules.js';
import { AppError } from '../../../domain/errors.js';
import { follow, listFollows, unfollow } from '../../../domain/follows/follows.service.js';
import { baseUrlOf } from '../../base-url.js';
import { avatarUrl } from '../../http-views.js';
import { builder } from '../builder.js';
import { readsKey, type GraphQLContext } from '../context.js';

/** Largest page of a follow list; a larger `first` is refused rather than silently cut. */
const MAX_PAGE = 50;
const DEFAULT_PAGE = 20;

/** The three counts of a profile come from one query, once per account per request. */
const statsLoader = createContextCache(
  (ctx: GraphQLContext) =>
    new DataLoader<string, AccountStats>((ids) => {
      for (const id of ids) readsKey(ctx, accountCountsKey(id));
      return Promise.all(ids.map((id) => ctx.deps.accounts.stats(id)));
    }),
);

/** One balance read per account per request, however many money fields the query selects. */
const moneyLoader = createContextCache(
  (ctx: GraphQLContext) =>
    new DataLoader<string, AccountMoney>((ids) => Promise.all(ids.map((id) => ctx.deps.ledger.money(id)))),
);
const moneyOf = (ctx: GraphQLContext, accountId: string) => moneyLoader(ctx).load(accountId);

const AccountRoleType = builder.enumType('AccountRole', {
  values: {
    USER: { value: 'user' },
    FINANCE: { value: 'finance' },
    ADMIN: { value: 'admin' },
  } as const,
});

/** Another account as anyone with a `read` key sees it (REST GET /users/:handle). */
export const AccountRef = builder.objectRef<Account>('Account');
/**
 * The caller's own account (REST GET /me): the public profile plus what only its owner sees, its
 * role, balances and API keys.
 */
export const ViewerRef = builder.objectRef<Account>('Viewer');

const AccountConnection = builder.connectionObject({
  type: AccountRef,
  name: 'AccountConnection',
  edgesNullable: false,
  nodeNullable: false,
});

/** Forward paging only, at most MAX_PAGE per page: the follow lists are keyset-paged newest first. */
async function followPage(
  ctx: GraphQLContext,
  side: 'followers' | 'following',
  accountId: string,
  args: { first?: number | null; after?: string | null; last?: number | null; before?: string | null },
) {
  if (args.last != null || args.before != null)
    throw new AppError('invalid_request', 'Follow lists page forward only: use first and after');
  const first = args.first ?? DEFAULT_PAGE;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE)
    throw new AppError('invalid_request', `first must be between 1 and ${MAX_PAGE}`, { field: 'first' });
  const page = await listFollows(ctx.deps, side, accountId, {
    first,
    ...(args.after != null ? { after: args.after } : {}),
  });
  // A follow or unfollow changes both accounts' counts key; each listed profile is shown too.
  readsKey(ctx, accountCountsKey(accountId));
  for (const { node } of page.items) readsKey(ctx, accountKey(node.id));
  return {
    edges: page.items,
    pageInfo: {
      hasNextPage: page.hasNextPage,
      // Keyset pages cannot tell cheaply whether anything is newer than `after` (Relay allows false).
      hasPreviousPage: false,
      startCursor: page.items[0]?.cursor ?? null,
      endCursor: page.items.at(-1)?.cursor ?? null,
    },
  };
}

// Fields both views share: the public profile, its counts and its follow lists.
for (const ref of [AccountRef, ViewerRef]) {
  builder.objectFields(ref, (t) => ({
    handle: t.exposeString('handle'),
    displayName: t.exposeString('displayName'),
    bio: t.exposeString('bio'),
    avatarUrl: t.string({
      description: 'Always a working URL: the default avatar we serve until one is set.',
      resolve: (account, _args, ctx) => avatarUrl(account, baseUrlOf(ctx.req)),
    }),
    walletAddress: t.exposeString('walletAddress', { description: 'The custodial Solana wallet.' }),
    socialUsername: t.exposeString('socialUsername', { nullable: true, description: 'Null until linked.' }),
    followerCount: t.int({
      resolve: async (account, _args, ctx) => (await statsLoader(ctx).load(account.id)).followerCount,
    }),
    followingCount: t.int({
      resolve: async (account, _args, ctx) => (await statsLoader(ctx).load(account.id)).followingCount,
    }),
    postCount: t.int({
      resolve: async (account, _args, ctx) => (await statsLoader(ctx).load(account.id)).postCount,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    followers: t.connection(
      {
        type: AccountRef,
        description: `Accounts following this one, newest follow first; \`first\` at most ${MAX_PAGE}.`,
        resolve: (account, args, ctx) => followPage(ctx, 'followers', account.id, args),
      },
      AccountConnection,
    ),
    following: t.connection(
      {
        type: AccountRef,
        description: `Accounts this one follows, newest follow first; \`first\` at most ${MAX_PAGE}.`,
        resolve: (account, args, ctx) => followPage(ctx, 'following', account.id, args),
      },
      AccountConnection,
    ),
  }));
}

ViewerRef.implement({
  fields: (t) => ({
    role: t.expose('role', { type: AccountRoleType }),
    // Balances are the owner's business, as in REST (GET /me has them, GET /users/:handle not).
    earnedUsdc: t.field({
      type: 'MicroUsd',
      description: 'Available balance.',
      resolve: async (account, _args, ctx) => (await moneyOf(ctx, account.id)).availableMicro,
    }),
    pendingUsdc: t.field({
      type: 'MicroUsd',
      description:
        'Credits (engagement shares, sends received) whose chain transaction has not confirmed yet, and deposits found on chain until their block is finalized; spendable once it does, gone if it fails or a fork drops it.',
      resolve: async (account, _args, ctx) => (await moneyOf(ctx, account.id)).pendingMicro,
    }),
    totalEarned: t.field({
      type: 'MicroUsd',
      resolve: async (account, _args, ctx) => (await moneyOf(ctx, account.id)).totalEarnedMicro,
    }),
    totalSpent: t.field({
      type: 'MicroUsd',
      resolve: async (account, _args, ctx) => (await moneyOf(ctx, account.id)).totalSpentMicro,
    }),
  }),
});
AccountRef.implement({ fields: () => ({}) });

builder.queryFields((t) => ({
  viewer: t.field({
    type: ViewerRef,
    description: 'The account behind the API key (REST GET /me). Needs `read`.',
    authScopes: { read: true },
    resolve: async (_root, _args, ctx) => {
      return requireAccount(ctx.deps.accounts, ctx.viewer!.accountId);
    },
  }),
  user: t.field({
    type: AccountRef,
    nullable: true,
    description: 'A public profile by handle (a leading @ is tolerated); null when none. Needs `read`.',
    authScopes: { read: true },
    args: { handle: t.arg.string({ required: true }) },
    resolve: async (_root, { handle }, ctx) => {
      try {
        const account = await findByHandle(ctx.deps.accounts, handle);
        readsKey(ctx, accountKey(account.id));
        return account;
      } catch (error) {
        if (error instanceof AppError && error.code === 'not_found') {
          readsKey(ctx, handleKey(normalizeHandle(handle))); // until someone takes the handle
          return null;
        }
        throw error;
      }
    },
  }),
}));

const ProfileInput = builder.inputType('UpdateProfileInput', {
  description: 'Only the fields given change.',
  fields: (t) => ({
    handle: t.string({
      required: false,
      description:
        '3-20 of a-z, 0-9, _; changes once per 7 days, with a key holding every scope. The handle given up stays reserved for this account for 7 days; returning to it is allowed meanwhile.',
    }),
    displayName: t.string({
      required: false,
      description: 'At most 50 characters; one line, no control or bidirectional control characters.',
    }),
    bio: t.string({
      required: false,
      description: 'At most 160 characters; one line, no control or bidirectional control characters.',
    }),
  }),
});

const FollowResult = builder.objectRef<{ followed: boolean; account: Account }>('FollowResult').implement({
  fields: (t) => ({
    followed: t.exposeBoolean('followed', { description: 'Whether the viewer now follows the account.' }),
    account: t.expose('account', { type: AccountRef }),
  }),
});

builder.mutationFields((t) => ({
  updateProfile: t.field({
    type: AccountRef,
    description:
      'Update the own profile (REST PATCH /me/profile). Needs `read`, as the spec says; changing the handle needs a key holding every scope.',
    authScopes: { read: true },
    rateLimit: 'read',
    args: { input: t.arg({ type: ProfileInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      // An explicit null reaches the service and is refused there like any non-string.
      return updateProfile(ctx.deps, ctx.viewer!, {
        handle: input.handle,
        displayName: input.displayName,
        bio: input.bio,
      });
    },
  }),
  follow: t.field({
    type: FollowResult,
    description: 'Follow an account (idempotent). Needs `engage`.',
    authScopes: { engage: true },
    rateLimit: 'like',
    args: { handle: t.arg.string({ required: true }) },
    resolve: async (_root, { handle }, ctx) => {
      return follow(ctx.deps, ctx.viewer!.accountId, handle);
    },
  }),
  unfollow: t.field({
    type: FollowResult,
    description: 'Unfollow an account (idempotent). Needs `engage`.',
    authScopes: { engage: true },
    rateLimit: 'like',
    args: { handle: t.arg.string({ required: true }) },
    resolve: async (_root, { handle }, ctx) => {
      return unfollow(ctx.deps, ctx.viewer!.accountId, handle);
    },
  }),
}));
