import { ALL_SCOPES, parseScopes, type Scope } from '../../../domain/auth/api-key.js';
import { createApiKey, revokeApiKey, type ApiKeyInfo } from '../../../domain/auth/api-keys.service.js';
import { AppError } from '../../../domain/errors.js';
import { builder } from '../builder.js';
import { ViewerRef } from './account.js';

/*
 * API key management. Listing keys needs `read` (ids and scopes, never secrets). Creating a key,
 * and revoking any key but the calling one, need a key holding every scope (the domain enforces
 * it): otherwise a read-only key, leaked or handed to a tool, could revoke its owner's full key,
 * fill both slots and lock the owner out. Both spend from the `read` bucket.
 */

const ScopeType = builder.enumType('Scope', {
  description: 'What an API key may do.',
  values: {
    READ: {
      value: 'read',
      description:
        'Read profiles and feeds; edit the own display name and bio. Keys and the handle need every scope.',
    },
    POST: { value: 'post', description: 'Post, reply, quote and repost.' },
    ENGAGE: { value: 'engage', description: 'Like and follow.' },
    SEND: { value: 'send', description: 'Send USDC.' },
  } as const,
});

const ApiKeyType = builder.objectRef<ApiKeyInfo>('ApiKey').implement({
  description: 'An API key as its owner sees it: never the secret, which is shown once at creation.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Public id: the first characters after the key prefix.' }),
    scopes: t.expose('scopes', { type: [ScopeType] }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
  }),
});

builder.objectField(ViewerRef, 'apiKeys', (t) =>
  t.field({
    type: [ApiKeyType],
    description: 'Every key of the account, revoked ones included, oldest first.',
    resolve: (account, _args, ctx) => ctx.deps.apiKeys.list(account.id),
  }),
);

const CreatedApiKey = builder.objectRef<{ key: string; info: ApiKeyInfo }>('CreatedApiKey').implement({
  fields: (t) => ({
    key: t.exposeString('key', { description: 'The whole key: shown this once, store it now.' }),
    apiKey: t.expose('info', { type: ApiKeyType }),
  }),
});

builder.mutationFields((t) => ({
  createApiKey: t.field({
    type: CreatedApiKey,
    description:
      'A new key with the given scopes (default: every scope); an account holds at most 2 active keys. Needs a key holding every scope.',
    authScopes: { read: true },
    rateLimit: 'read',
    args: { scopes: t.arg({ type: [ScopeType], required: false }) },
    resolve: async (_root, { scopes }, ctx) => {
      return createApiKey(
        ctx.deps.apiKeys,
        ctx.viewer!.accountId,
        scopes ? checkedScopes(scopes) : ALL_SCOPES,
        ctx.viewer!,
      );
    },
  }),
  revokeApiKey: t.boolean({
    description:
      'Revoke one of the own keys; true once revoked. Any key may revoke itself; revoking another key needs a key holding every scope.',
    authScopes: { read: true },
    rateLimit: 'read',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await revokeApiKey(ctx.deps.apiKeys, String(id), ctx.viewer!.accountId, ctx.viewer!);
      return true;
    },
  }),
}));

/** The domain's rule for a scope list (non-empty, no duplicates), as a client error. */
function checkedScopes(scopes: Scope[]): Scope[] {
  try {
    return parseScopes(scopes);
  } catch (error) {
    if (error instanceof TypeError) throw new AppError('invalid_request', error.message, { field: 'scopes' });
    throw error;
  }
}
