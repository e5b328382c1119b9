import {
  audienceFor,
  MAX_AUDIENCE_RANGE_DAYS,
  TOP_SUPPORTERS,
  type Audience,
  type Supporter,
} from '../../../app/analytics/audience.js';
import {
  postEarningsFor,
  postStatsFor,
  type PostActivityBucket,
  type PostEarningsRow,
  type PostStatsAnswer,
} from '../../../app/analytics/post-earnings.js';
import { creatorEarningsFor } from '../../../app/analytics/creator-earnings.js';
import {
  EARNINGS_RANGE_LIMITS,
  type EarningsBucket as EarningsBucketRow,
} from '../../../domain/analytics/earnings-period.js';
import { builder } from '../builder.js';
import { lastEdgeCursor, pageInfoOf, pageInput, withAfterArgument } from './page-args.js';
import { postLoader } from './post-loaders.js';
import { PostRef } from './post.js';

/*
 * What a creator reads about their own money and audience (issue 51): earnings over any period,
 * every post's earnings, the audience. Each answers for the viewer's own handle; finance and admin
 * may read any. Served from ClickHouse (schema/clickhouse/0005_creator_analytics.sql).
 */

const limits = EARNINGS_RANGE_LIMITS;

const EarningsGranularity = builder.enumType('EarningsGranularity', {
  values: {
    HOUR: { value: 'hour', description: `Local hours; [from, to) at most ${limits.hour.label}.` },
    DAY: { value: 'day', description: `From local midnight; at most ${limits.day.label}.` },
    WEEK: { value: 'week', description: `From local Monday midnight; at most ${limits.week.label}.` },
    MONTH: { value: 'month', description: `From the local 1st at midnight; at most ${limits.month.label}.` },
  } as const,
});

const EarningsGroupBy = builder.enumType('EarningsGroupBy', {
  values: {
    NONE: { value: 'none', description: 'One total per bucket.' },
    SOURCE: { value: 'source', description: 'Per bucket and paid engagement (reply, quote, repost).' },
    POST: { value: 'post', description: "Per bucket and the creator's post engaged with." },
  } as const,
});

const EarningsSource = builder.enumType('EarningsSource', {
  values: {
    REPLY: { value: 'reply', description: "The creator's share of a paid reply to their post." },
    QUOTE: { value: 'quote', description: "The creator's share of a paid quote of their post." },
    REPOST: { value: 'repost', description: "The creator's share of a paid repost of their post." },
  } as const,
});

const EarningsBucket = builder.objectRef<EarningsBucketRow>('EarningsBucket').implement({
  fields: (t) => ({
    bucket: t.exposeString('bucket', {
      description:
        'Start of the bucket (the hour, local midnight, Monday or 1st in the asked timezone) as an ISO 8601 UTC instant.',
    }),
    amountUsdMicro: t.field({
      type: 'MicroUsd',
      description: 'The USDC earned in the bucket (and group), net of reversed payments.',
      resolve: (p) => p.amountMicro,
    }),
    source: t.field({
      type: EarningsSource,
      nullable: true,
      description:
        'Set when grouped by SOURCE (null there only for earnings shipped before sources were recorded, until `cli reindex`).',
      resolve: (p) => p.source,
    }),
    postId: t.id({
      nullable: true,
      description: "The creator's post the earning engagement was on; set when grouped by POST.",
      resolve: (p) => p.postId,
    }),
  }),
});

builder.queryFields((t) => ({
  creatorEarnings: t.field({
    type: [EarningsBucket],
    description:
      "The creator's USDC earnings (their share of paid replies, quotes and reposts on their posts) per bucket in [from, to), oldest first; buckets without earnings are absent. Creator-fund payouts (native tokens) and received sends are not included. Own handle; finance/admin any; another handle is FORBIDDEN. A range longer than the granularity allows is BAD_USER_INPUT.",
    authScopes: { read: true },
    args: {
      handle: t.arg.string({ required: true }),
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
      granularity: t.arg({ type: EarningsGranularity, required: true }),
      timezone: t.arg.string({
        description: 'An IANA time zone name (default UTC): where days, weeks and months start.',
      }),
      groupBy: t.arg({ type: EarningsGroupBy, defaultValue: 'none' }),
    },
    resolve: (_root, args, ctx) =>
      creatorEarningsFor(ctx.deps, ctx.viewer!, {
        handle: args.handle,
        from: new Date(args.from),
        to: new Date(args.to),
        granularity: args.granularity,
        timezone: args.timezone ?? null,
        groupBy: args.groupBy ?? 'none',
      }),
  }),
}));

/* Every post's earnings (postEarnings) and one post's over time (postStats). */

const PostEarningsOrderEnum = builder.enumType('PostEarningsOrder', {
  values: {
    EARNED: { value: 'earned', description: 'Net earnings in the range, highest first.' },
    ENGAGEMENT: {
      value: 'engagement',
      description: 'Likes + replies + quotes + reposts in the range, highest first.',
    },
    NEWEST: { value: 'newest', description: 'Creation time, newest first.' },
  } as const,
});

const activityFields = {
  earned: 'The author’s USDC share of the replies, quotes and reposts paid on the post, net of reversals.',
  likes: 'Likes minus unlikes.',
} as const;

const PostEarningsRef = builder.objectRef<PostEarningsRow>('PostEarnings').implement({
  description: 'One of the creator’s posts with what it earned and its engagement over the asked range.',
  fields: (t) => ({
    postId: t.exposeID('postId'),
    post: t.field({
      type: PostRef,
      nullable: true,
      description: 'The post as the read path shows it; null when its payment failed on chain.',
      resolve: (row, _args, ctx) => postLoader(ctx).load(row.postId),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    earnedUsdMicro: t.field({
      type: 'MicroUsd',
      description: activityFields.earned,
      resolve: (row) => row.earnedMicro,
    }),
    likes: t.exposeInt('likes', { description: activityFields.likes }),
    replies: t.exposeInt('replies'),
    quotes: t.exposeInt('quotes'),
    reposts: t.exposeInt('reposts'),
  }),
});

const PostEarningsConnection = builder.connectionObject({
  type: PostEarningsRef,
  name: 'PostEarningsConnection',
  edgesNullable: false,
  nodeNullable: false,
});

const PostStatsBucketRef = builder.objectRef<PostActivityBucket>('PostStatsBucket').implement({
  fields: (t) => ({
    bucket: t.expose('bucket', {
      type: 'DateTime',
      description: 'Start of the hour, day, week or month at local time in the asked zone, as a UTC instant.',
    }),
    earnedUsdMicro: t.field({
      type: 'MicroUsd',
      description: activityFields.earned,
      resolve: (b) => b.earnedMicro,
    }),
    likes: t.exposeInt('likes', { description: activityFields.likes }),
    replies: t.exposeInt('replies'),
    quotes: t.exposeInt('quotes'),
    reposts: t.exposeInt('reposts'),
  }),
});

const PostStatsRef = builder.objectRef<PostStatsAnswer>('PostStats').implement({
  description: 'A post’s engagement and earnings over the asked range, or its lifetime without one.',
  fields: (t) => ({
    likes: t.exposeInt('likes', { description: activityFields.likes }),
    replies: t.exposeInt('replies'),
    quotes: t.exposeInt('quotes'),
    reposts: t.exposeInt('reposts'),
    earnedUsdMicro: t.field({
      type: 'MicroUsd',
      description: activityFields.earned,
      resolve: (s) => s.earnedMicro,
    }),
    series: t.field({
      type: [PostStatsBucketRef],
      nullable: true,
      description:
        'Per granularity bucket, oldest first, only buckets with activity; their sums are the totals above. Null unless a granularity was given.',
      resolve: (s) => s.series ?? null,
    }),
  }),
});

builder.queryFields((t) => ({
  postEarnings: t.connection(
    {
      type: PostEarningsRef,
      description:
        'Every post (not reposts) of the creator created before `to`, with its earnings and engagement in [from, to) (at most 400 days); first 1 to 50 (default 20), forward only. Under EARNED and ENGAGEMENT, posts with no earnings (EARNED) or no engagement (ENGAGEMENT) in the range come last; every order ends newest first, then by id. Own handle; finance/admin any.',
      authScopes: { read: true },
      args: {
        handle: t.arg.string({ required: true }),
        from: t.arg({ type: 'DateTime', required: true }),
        to: t.arg({ type: 'DateTime', required: true }),
        orderBy: t.arg({ type: PostEarningsOrderEnum, required: true, defaultValue: 'earned' }),
      },
      resolve: async (_root, args, ctx) => {
        const { limit, cursor } = pageInput(args);
        const page = await withAfterArgument(() =>
          postEarningsFor(ctx.deps, ctx.viewer!, {
            handle: args.handle,
            from: new Date(args.from),
            to: new Date(args.to),
            order: args.orderBy,
            first: limit,
            after: cursor,
          }),
        );
        const edges = page.rows.map((row, i) => ({
          node: row,
          cursor: lastEdgeCursor(i, page.rows.length, page.nextCursor),
        }));
        return { edges, pageInfo: pageInfoOf(page, edges) };
      },
    },
    PostEarningsConnection,
  ),
  postStats: t.field({
    type: PostStatsRef,
    description:
      "A post's engagement and earnings: lifetime, or over [from, to) (both or neither); with granularity also per bucket (HOUR up to 31 days, DAY 400, WEEK and MONTH 5 years) starting at local time in `timezone` (IANA, default UTC). Its author's; finance/admin any.",
    authScopes: { read: true },
    args: {
      id: t.arg.id({ required: true }),
      from: t.arg({ type: 'DateTime' }),
      to: t.arg({ type: 'DateTime' }),
      granularity: t.arg({ type: EarningsGranularity }),
      timezone: t.arg.string(),
    },
    resolve: (_root, args, ctx) =>
      postStatsFor(ctx.deps, ctx.viewer!, String(args.id), {
        from: args.from ? new Date(args.from) : null,
        to: args.to ? new Date(args.to) : null,
        granularity: args.granularity ?? null,
        timezone: args.timezone ?? null,
      }),
  }),
}));

const SupporterRef = builder.objectRef<Supporter>('Supporter').implement({
  fields: (t) => ({
    handle: t.exposeString('handle'),
    paidUsdMicro: t.field({
      type: 'MicroUsd',
      description:
        "The creator's USDC share of the replies, quotes and reposts this account paid on the creator's posts in the range, net of reversed payments.",
      resolve: (s) => s.paidMicro,
    }),
  }),
});

const AudienceRef = builder.objectRef<Audience>('Audience').implement({
  description:
    'Who engaged with, paid and followed a creator in [from, to) (docs/indexer.md, creator audience).',
  fields: (t) => ({
    uniqueEngagers: t.exposeInt('uniqueEngagers', {
      description:
        "Distinct accounts that liked, replied to, quoted or reposted the creator's posts in the range; the creator's own engagement is not counted.",
    }),
    payingEngagers: t.exposeInt('payingEngagers', {
      description:
        "Distinct accounts whose replies, quotes or reposts on the creator's posts paid the creator in the range (net of reversed payments).",
    }),
    newFollowers: t.exposeInt('newFollowers', {
      description: 'Accounts following the creator now whose follow began in the range.',
    }),
    topSupporters: t.field({
      type: [SupporterRef],
      description: `The ${TOP_SUPPORTERS} accounts that paid the most into the creator's earnings in the range, most first, ties by handle.`,
      resolve: (a) => a.topSupporters,
    }),
  }),
});

builder.queryFields((t) => ({
  audience: t.field({
    type: AudienceRef,
    description: `A creator's audience in [from, to), at most ${MAX_AUDIENCE_RANGE_DAYS} days (REST GET /me/audience). Own handle; finance/admin any. Needs \`read\`.`,
    authScopes: { read: true },
    args: {
      handle: t.arg.string({ required: true }),
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
    },
    resolve: (_root, args, ctx) =>
      audienceFor(ctx.deps, ctx.viewer!, {
        handle: args.handle,
        from: new Date(args.from),
        to: new Date(args.to),
      }),
  }),
}));
