import type { RateLimitBucket } from '../../domain/rate-limits/rate-limit-policy.js';
import { spend } from '../rest/auth.hook.js';
import type { GraphQLContext } from './context.js';
import { appErrorOf } from './errors.js';

/**
 * Spends one request of `bucket` for a top-level field: the bucket of the field's REST twin, per
 * account, so a client cannot double its budget by switching transports. Called first in each
 * resolver, after the scope check, so the order a client sees matches REST: 401, 403, then 429.
 * The IETF RateLimit headers (and Retry-After once refused) land on the HTTP response; with several
 * fields in one document the last one spent wins.
 */
export async function spendFor(ctx: GraphQLContext, bucket: RateLimitBucket): Promise<void> {
  const subject = ctx.viewer?.accountId ?? `ip:${ctx.req.ip}`;
  ctx.spent.push(bucket);
  try {
    await spend(ctx.deps, ctx.reply, bucket, subject);
  } catch (error) {
    const retryAfter = appErrorOf(error)?.details.retryAfterSeconds;
    if (typeof retryAfter === 'number') void ctx.reply.header('retry-after', String(retryAfter));
    throw error;
  }
}
