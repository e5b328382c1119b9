import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import { createAccount } from '../../domain/accounts/accounts.service.js';
import { createApiKey } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { baseUrlOf } from '../base-url.js';
import { errorBody, ownProfile, signUpBody } from './schemas.js';
import { NO_MONEY, ownProfileView } from './views.js';

/** Open sign-up: an account, its custodial wallet and its first API key (shown this once). */
export function registerAccountRoutes(api: FastifyInstance, deps: ApiDeps): void {
  typedRoutes(api).post(
    '/accounts',
    {
      config: { bucket: 'signup' },
      schema: {
        operationId: 'createAccount',
        summary: 'Open an account (rate-limited per client IP)',
        security: [],
        tags: ['accounts'],
        body: signUpBody,
        response: {
          201: {
            type: 'object',
            required: ['account', 'api_key'],
            properties: {
              account: ownProfile,
              api_key: { type: 'string', description: 'The full key: shown once, store it now' },
            },
          },
          400: errorBody,
          409: errorBody,
          429: errorBody,
        },
      },
    },
    async (request, reply) => {
      await spendGlobalSignupBudget(deps);
      const account = await createAccount(deps, {
        handle: request.body.handle,
        displayName: request.body.display_name,
      });
      const { key } = await createApiKey(deps.apiKeys, account.id);
      return reply
        .status(201)
        .send({ account: ownProfileView(account, NO_MONEY, baseUrlOf(request)), api_key: key });
    },
  );
}

/**
 * The deployment-wide sign-up budget (bucket signup_global), spent after the per-IP one (the
 * route's bucket, in the auth hook) and after the body is validated: only well-formed sign-ups of
 * clients within their own budget count, so one address cannot spend it faster than its 5 an hour.
 * No RateLimit headers: the remaining count would tell anyone how many accounts were opened lately.
 */
async function spendGlobalSignupBudget(deps: ApiDeps): Promise<void> {
  const decision = await deps.rateLimiter.consume('signup_global', 'all');
  if (decision.disabled || decision.allowed) return;
  const retryAfterSeconds = decision.retryAfterSeconds ?? decision.resetSeconds;
  throw new AppError(
    'rate_limited',
    `Rate limit exceeded: too many accounts were opened in the last hour; retry in ${retryAfterSeconds} s`,
    { retryAfterSeconds },
  );
}
