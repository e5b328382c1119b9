import { OperationTypeNode } from 'graphql';
import { clientSubject } from '../client-subject.js';
import type { RateLimitBucket } from '../../domain/rate-limits/rate-limit-policy.js';
import { spend } from '../rate-limit-spend.js';
import type { GraphQLContext } from './context.js';
import { appErrorOf } from './errors.js';

/**
 * Cost that one request of a rate-limit bucket pays for: a query spends ceil(cost / COST_PER_REQUEST)
 * requests. A page of 20 posts with a dozen fields each costs ~400 (one request, as REST GET /feed
 * does), a page of 50 with their authors ~1,000 (two); the most costly operation allowed, 20.
 */
export const COST_PER_REQUEST = 500;

/**
 * Spends one request of `bucket` for a mutation or subscription field: the bucket of the field's
 * REST twin, per account, so a client cannot double its budget by switching transports. The
 * field declares the bucket (`rateLimit`); rate-limit-plugin.ts calls this before its resolver,
 * after the scope check, so the order a client sees matches REST: 401, 403, then 429. Queries do not call it: the whole operation spends by its cost (spendOperation).
 * The IETF RateLimit headers (and Retry-After once refused) land on the HTTP response; with several
 * fields in one document the last one spent wins.
 */
export async function spendFor(ctx: GraphQLContext, bucket: RateLimitBucket): Promise<void> {
  await spendCost(ctx, bucket, 1);
}

/**
 * Spends a whole operation's budget by its cost (query-limits.ts), once, before it executes:
 *
 * - without an API key: the client IP's `anonymous` bucket, ceil(cost / COST_PER_REQUEST) and at
 *   least 1 (a `{ __typename }` costs nothing to resolve but is still a request);
 * - a query: the account's `read` bucket, the same count, so aliased or nested loads (500
 *   `viewer.nativeTokens`, 30 `creatorEarnings`, `creatorFundEpochs(limit: 100)`) spend what they
 *   load, and fields that spent nothing before (finance, creator fund) are covered;
 * - a mutation: each field spends its REST twin's bucket itself (spendFor), as REST does; only the
 *   cost beyond one request (a result selection that loads pages) spends `read` on top.
 *
 * Subscriptions spend per field when they start (their resolvers call spendFor).
 */
export async function spendOperation(
  ctx: GraphQLContext,
  operation: OperationTypeNode,
  cost: number,
): Promise<void> {
  const requests = Math.ceil(cost / COST_PER_REQUEST);
  if (!ctx.viewer) return spendCost(ctx, 'anonymous', Math.max(1, requests));
  if (operation === OperationTypeNode.QUERY) return spendCost(ctx, 'read', Math.max(1, requests));
  if (operation === OperationTypeNode.MUTATION && requests > 1) return spendCost(ctx, 'read', requests - 1);
}

async function spendCost(ctx: GraphQLContext, bucket: RateLimitBucket, cost: number): Promise<void> {
  const subject = ctx.viewer?.accountId ?? clientSubject(ctx.req.ip);
  ctx.spent.push({ bucket, cost });
  try {
    await spend(ctx.deps, ctx.reply, bucket, subject, cost);
  } catch (error) {
    const retryAfter = appErrorOf(error)?.details.retryAfterSeconds;
    if (typeof retryAfter === 'number') void ctx.reply.header('retry-after', String(retryAfter));
    throw error;
  }
}
