import type { FastifyInstance, RouteOptions } from 'fastify';
import type { ApiDeps } from '../../app/api-deps.js';
import type { StreamSlots } from '../stream-slots.js';
import { registerAccountRoutes } from './accounts.routes.js';
import { registerAudienceRoutes } from './audience.routes.js';
import { createAuthHook } from './auth.hook.js';
import { registerEarningsRoutes } from './earnings.routes.js';
import { registerEngagementRoutes } from './engagement.routes.js';
import { registerEventRoutes } from './events.routes.js';
import type { FeedPages } from './feed-pages.js';
import { registerFeedRoutes } from './feed.routes.js';
import { registerFinanceRoutes } from './finance.routes.js';
import { registerFinancePeriodRoutes } from './finance-periods.routes.js';
import { registerIdempotency } from './idempotency.hook.js';
import { registerPostEarningsRoutes } from './post-earnings.routes.js';
import { registerPostRoutes } from './posts.routes.js';
import { registerProfileRoutes } from './profiles.routes.js';
import { registerReportRoutes } from './reports.routes.js';
import { registerSendRoutes } from './send.routes.js';
import { registerSwapRoutes } from './swap.routes.js';
import { registerTransactionRoutes } from './transactions.routes.js';
import { registerWebhookRoutes } from './webhooks.routes.js';

/**
 * Every /api/v1 route names the rate-limit bucket it spends (`config.bucket`): a route registered
 * without one stops the server from starting, so a new route cannot forget it.
 */
export function requireRateLimit(route: RouteOptions): void {
  if (!route.config?.bucket) {
    throw new Error(
      `${route.method.toString()} ${route.url}: every /api/v1 route declares config.bucket (its rate limit)`,
    );
  }
}

/**
 * The /api/v1 compatibility layer. Each route parses input, calls one service function and maps
 * its result onto the spec's shapes. One onRequest hook authenticates, checks the scope and spends
 * the rate limit, from each route's `config`.
 */
export function registerRestRoutes(
  api: FastifyInstance,
  deps: ApiDeps,
  feedPages: FeedPages,
  streams: StreamSlots,
): void {
  api.addHook('onRoute', requireRateLimit);
  // onRequest: before the body is read or validated, so junk from an unknown caller costs nothing
  // and even invalid requests spend the rate limit.
  api.addHook('onRequest', createAuthHook(deps));
  registerIdempotency(api, deps);
  registerAccountRoutes(api, deps);
  registerFinanceRoutes(api, deps);
  registerFinancePeriodRoutes(api, deps);
  registerProfileRoutes(api, deps);
  registerPostRoutes(api, deps);
  registerPostEarningsRoutes(api, deps);
  registerAudienceRoutes(api, deps);
  registerEngagementRoutes(api, deps);
  registerFeedRoutes(api, deps, feedPages);
  registerTransactionRoutes(api, deps);
  registerEarningsRoutes(api, deps);
  registerSendRoutes(api, deps);
  registerSwapRoutes(api, deps);
  registerWebhookRoutes(api, deps);
  registerReportRoutes(api, deps);
  registerEventRoutes(api, deps, streams);
}
