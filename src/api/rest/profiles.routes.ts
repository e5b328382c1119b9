import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import { findByHandle, requireAccount, updateProfile } from '../../domain/accounts/accounts.service.js';
import { follow, unfollow } from '../../domain/follows/follows.service.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { baseUrlOf } from '../base-url.js';
import {
  authErrors,
  errorBody,
  handleParams,
  ownProfile,
  profilePatchBody,
  publicProfile,
} from './schemas.js';
import { ownProfileView, publicProfileView, updatedProfileView } from './views.js';

/**
 * Own profile, public profiles and follows. Scope choices where the spec is silent or torn
 * (README): profile update needs `read` (as the spec says) for display name and bio, but a handle
 * change needs a key holding every scope (the service checks it: a handle is what sends resolve
 * by, so a read key must not be able to give it away); follow and unfollow need `engage`.
 */
export function registerProfileRoutes(api: FastifyInstance, deps: ApiDeps): void {
  api.get(
    '/me',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'getMe',
        summary: 'Own profile',
        tags: ['profiles'],
        response: { 200: ownProfile, ...authErrors },
      },
    },
    async (request) => {
      const account = await requireAccount(deps.accounts, request.viewer!.accountId);
      const [usdc, native] = await Promise.all([
        deps.ledger.money(account.id),
        deps.ledger.money(account.id, 'native'),
      ]);
      return ownProfileView(account, usdc, baseUrlOf(request), native.availableMicro);
    },
  );

  typedRoutes(api).patch(
    '/me/profile',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'updateProfile',
        summary:
          'Update own profile (only supplied fields change; handle once per 7 days, with a key holding every scope)',
        tags: ['profiles'],
        body: profilePatchBody,
        response: {
          200: {
            type: 'object',
            required: ['handle', 'display_name', 'bio', 'avatar_url'],
            properties: {
              handle: { type: 'string' },
              display_name: { type: 'string' },
              bio: { type: 'string' },
              avatar_url: { type: 'string', format: 'uri' },
            },
          },
          400: errorBody,
          409: errorBody,
          ...authErrors,
        },
      },
    },
    async (request) => {
      const { body } = request;
      const account = await updateProfile(deps, request.viewer!, {
        handle: body.handle,
        displayName: body.display_name,
        bio: body.bio,
      });
      return updatedProfileView(account, baseUrlOf(request));
    },
  );

  typedRoutes(api).get(
    '/users/:handle',
    {
      config: { scope: 'read', bucket: 'read' },
      schema: {
        operationId: 'getUser',
        summary: 'Public profile',
        tags: ['profiles'],
        params: handleParams,
        response: { 200: publicProfile, 404: errorBody, ...authErrors },
      },
    },
    async (request) => {
      const account = await findByHandle(deps.accounts, request.params.handle);
      return publicProfileView(account, await deps.accounts.stats(account.id), baseUrlOf(request));
    },
  );

  const followResponse = {
    200: { type: 'object', required: ['followed'], properties: { followed: { type: 'boolean' } } },
    400: errorBody,
    404: errorBody,
    ...authErrors,
  } as const;

  typedRoutes(api).post(
    '/users/:handle/follow',
    {
      config: { scope: 'engage', bucket: 'like' },
      schema: {
        operationId: 'followUser',
        summary: 'Follow a user (idempotent)',
        tags: ['profiles'],
        params: handleParams,
        response: followResponse,
      },
    },
    async (request) => {
      const { followed } = await follow(deps, request.viewer!.accountId, request.params.handle);
      return { followed };
    },
  );

  typedRoutes(api).delete(
    '/users/:handle/follow',
    {
      config: { scope: 'engage', bucket: 'like' },
      schema: {
        operationId: 'unfollowUser',
        summary: 'Unfollow a user (idempotent)',
        tags: ['profiles'],
        params: handleParams,
        response: followResponse,
      },
    },
    async (request) => {
      const { followed } = await unfollow(deps, request.viewer!.accountId, request.params.handle);
      return { followed };
    },
  );
}
