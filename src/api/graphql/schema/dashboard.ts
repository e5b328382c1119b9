import { devFaucetAvailable, grantDevFunds } from '../../../app/dashboards/dev-faucet.js';
import { MAX_TOP_POSTS, topPosts, type PostPerformanceRow } from '../../../app/dashboards/top-posts.js';
import { builder } from '../builder.js';
import { ViewerRef } from './account.js';

/*
 * What the web dashboards (/dashboard) need beyond the existing reads: the cluster (explorer links,
 * whether the dev faucet exists), the dev faucet itself, and a creator's best posts.
 */

interface ChainInfo {
  cluster: string;
  faucetAvailable: boolean;
  explorerTxUrlTemplate: string;
}

const ChainInfoRef = builder.objectRef<ChainInfo>('ChainInfo').implement({
  description: 'The cluster this deployment settles on, as the dashboards need it.',
  fields: (t) => ({
    cluster: t.exposeString('cluster', {
      description: 'mainnet-beta, devnet, testnet, localnet (embedded) or local-validator.',
    }),
    faucetAvailable: t.exposeBoolean('faucetAvailable', {
      description:
        'Whether devFaucet mints here: a private cluster (the embedded localnet or a validator of ours) whose test USDC the platform mints.',
    }),
    explorerTxUrlTemplate: t.exposeString('explorerTxUrlTemplate', {
      description:
        "A block-explorer link for a transaction: replace {signature}. Local clusters use the explorer's custom-cluster form with PUBLIC_RPC_URL.",
    }),
  }),
});

const FaucetGrant = builder.objectRef<{ signature: string; amountMicro: bigint }>('FaucetGrant').implement({
  fields: (t) => ({
    signature: t.exposeString('signature', { description: 'The mint transaction.' }),
    amountUsdMicro: t.field({ type: 'MicroUsd', resolve: (g) => g.amountMicro }),
  }),
});

const TopPostsOrderEnum = builder.enumType('TopPostsOrder', {
  values: { EARNINGS: { value: 'earnings' }, ENGAGEMENT: { value: 'engagement' } } as const,
});

const PostPerformance = builder.objectRef<PostPerformanceRow>('PostPerformance').implement({
  description: 'One of the own posts: what it earned (direct shares, net of reversals) and its engagement.',
  fields: (t) => ({
    postId: t.exposeID('postId'),
    type: t.exposeString('type'),
    content: t.exposeString('content'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    earnedUsdMicro: t.field({ type: 'MicroUsd', resolve: (p) => p.earnedMicro }),
    likes: t.exposeInt('likes'),
    replies: t.exposeInt('replies'),
    quotes: t.exposeInt('quotes'),
    reposts: t.exposeInt('reposts'),
  }),
});

builder.objectField(ViewerRef, 'topPosts', (t) =>
  t.field({
    type: [PostPerformance],
    description: `The own posts ranked by earnings or by engagement (likes + replies + quotes + reposts), best first; \`first\` 1 to ${MAX_TOP_POSTS} (default 5). Read from the ledger, so it moves as soon as a payment lands.`,
    args: {
      by: t.arg({ type: TopPostsOrderEnum, required: true }),
      first: t.arg.int({ required: false }),
    },
    resolve: (account, args, ctx) => topPosts(ctx.deps, account.id, { order: args.by, first: args.first }),
  }),
);

builder.queryFields((t) => ({
  chainInfo: t.field({
    type: ChainInfoRef,
    description: 'The cluster, explorer link form and faucet availability. Needs `read`.',
    authScopes: { read: true },
    resolve: async (_root, _args, ctx) => {
      const cluster = (await ctx.deps.bootstrapChain()).cluster;
      return {
        cluster,
        faucetAvailable: await devFaucetAvailable(ctx.deps),
        explorerTxUrlTemplate: explorerTxUrlTemplate(cluster, ctx.deps.publicRpcUrl),
      };
    },
  }),
}));

builder.mutationFields((t) => ({
  devFaucet: t.field({
    type: FaucetGrant,
    description:
      'Localnet only: mints $10 of USDC into the own wallet and credits it as a deposit; at most 3 per 10 minutes per account. FORBIDDEN on any other cluster. Needs `read`.',
    authScopes: { read: true },
    rateLimit: 'read',
    resolve: async (_root, _args, ctx) => {
      return grantDevFunds(ctx.deps, ctx.viewer!);
    },
  }),
}));

/** Solana Explorer's link for a signature on `cluster` ({signature} stays a placeholder). */
export function explorerTxUrlTemplate(cluster: string, rpcUrl: string): string {
  const base = 'https://explorer.solana.com/tx/{signature}';
  switch (cluster) {
    case 'mainnet-beta':
      return base;
    case 'devnet':
    case 'testnet':
      return `${base}?cluster=${cluster}`;
    default:
      return `${base}?cluster=custom&customUrl=${encodeURIComponent(rpcUrl)}`;
  }
}
