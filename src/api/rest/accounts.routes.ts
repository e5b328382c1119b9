import type { FastifyInstance } from 'fastify';
import { createAccount } from '../../domain/accounts/accounts.service.js';
import { createApiKey } from '../../domain/auth/api-keys.service.js';
import type { ApiDeps } from '../api-deps.js';
import { baseUrlOf } from './base-url.js';
import { errorBody, ownProfile, signUpBody } from './schemas.js';
import { NO_MONEY, ownProfileView } from './views.js';

/** Open sign-up: an account, its custodial wallet and its first API key (shown this once). */
export function registerAccountRoutes(api: FastifyInstance, deps: ApiDeps): void {
  api.post<{ Body: { handle: string; display_name?: string } }>(
    '/accounts',
    {
      config: { bucket: 'signup' },
      schema: {
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
