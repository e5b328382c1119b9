import SchemaBuilder from '@pothos/core';
import DataloaderPlugin from '@pothos/plugin-dataloader';
import ErrorsPlugin from '@pothos/plugin-errors';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import type { GraphQLContext } from './context.js';
import { isFinance } from '../../domain/auth/access-rules.js';
import { authFailureError } from './errors.js';
import { RATE_LIMIT_PLUGIN } from './rate-limit-plugin.js';

/**
 * The Pothos builder. Plugins chosen for what the schema needs: scope-auth (API key scopes and
 * roles, checked the same way as REST), relay (cursor connections for feed and histories),
 * dataloader (one batched query per type per request), errors (AppError as typed results).
 * Scope-auth goes first so authorization runs before any other plugin's resolver wrapping; then
 * the declared rate limit of mutation and subscription fields (rate-limit-plugin.ts).
 */
export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  AuthScopes: {
    authenticated: boolean;
    read: boolean;
    post: boolean;
    engage: boolean;
    send: boolean;
    finance: boolean;
    admin: boolean;
  };
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    MicroUsd: { Input: bigint; Output: bigint };
    JSONObject: { Input: never; Output: Record<string, unknown> };
  };
  DefaultFieldNullability: false;
}>({
  plugins: [ScopeAuthPlugin, RATE_LIMIT_PLUGIN, ErrorsPlugin, RelayPlugin, DataloaderPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    // Subscriptions check scopes when they start (no stream for a caller without `read`), not only
    // when each event resolves.
    authorizeOnSubscribe: true,
    // Worded as REST words it: 401 UNAUTHENTICATED without a key, 403 FORBIDDEN naming the scope.
    unauthorizedError: (_parent, ctx, _info, result) => authFailureError(ctx.viewer, result.failure),
    authScopes: (ctx) => ({
      authenticated: ctx.viewer !== null,
      read: ctx.viewer?.scopes.has('read') ?? false,
      post: ctx.viewer?.scopes.has('post') ?? false,
      engage: ctx.viewer?.scopes.has('engage') ?? false,
      send: ctx.viewer?.scopes.has('send') ?? false,
      // Roles widen what an account may read, never what a key may do: a field gated on a role
      // also asks the key scope its REST twin asks, e.g. `{ $all: { read: true, finance: true } }`.
      finance: isFinance(ctx.viewer),
      admin: ctx.viewer?.role === 'admin',
    }),
  },
  relay: {},
  errors: { defaultTypes: [] },
});

builder.queryType({});
builder.mutationType({});

builder.scalarType('DateTime', {
  description: 'An instant, serialised as an ISO 8601 string in UTC.',
  serialize: (value) => value.toISOString(),
  parseValue: (value) => {
    const date = typeof value === 'string' ? new Date(value) : new Date(Number.NaN);
    if (Number.isNaN(date.getTime())) throw new TypeError('DateTime must be an ISO 8601 string');
    return date;
  },
});

builder.scalarType('MicroUsd', {
  description:
    'An amount of US dollars in micro-USD (1 USD = 1000000), as a decimal string so no precision is lost.',
  serialize: (value) => value.toString(),
  parseValue: (value) => {
    if (typeof value !== 'string' || !/^-?\d{1,30}$/.test(value))
      throw new TypeError('MicroUsd must be a string of digits (micro-USD)');
    return BigInt(value);
  },
});

builder.scalarType('JSONObject', {
  description:
    'A JSON object, as the REST API answers it (an event’s `data`: its fields depend on the event type). Output only.',
  serialize: (value) => value,
  parseValue: () => {
    throw new TypeError('JSONObject is output only');
  },
});
