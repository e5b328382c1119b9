import { AuthScopeFailureType, type AuthFailure } from '@pothos/plugin-scope-auth';
import { GraphQLError } from 'graphql';
import { maskError as maskUnexpected } from 'graphql-yoga';
import { ALL_SCOPES, type Scope } from '../../domain/auth/api-key.js';
import type { Viewer } from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';
import { graphqlCodeOf, httpStatusOf } from '../error-map.js';

/**
 * A service error as a GraphQL error: its message (written for people, as REST sends it), the code
 * from the error map in `extensions.code`, and its details (`retryAfterSeconds`, `allowedAt`,
 * `field`) beside it. `located` keeps the path and locations of the field that failed.
 */
export function toGraphqlError(
  error: AppError,
  located?: GraphQLError,
  extensions: Record<string, unknown> = {},
): GraphQLError {
  return new GraphQLError(error.message, {
    nodes: located?.nodes,
    source: located?.source,
    positions: located?.positions,
    path: located?.path,
    extensions: { ...error.details, ...extensions, code: graphqlCodeOf[error.code] },
  });
}

/** The AppError behind an error graphql-js wrapped (once per field it passed through), if any. */
export function appErrorOf(error: unknown): AppError | undefined {
  if (error instanceof AppError) return error;
  if (error instanceof GraphQLError) return appErrorOf(error.originalError);
  return undefined;
}

/**
 * Yoga's error masking, except for service errors: those are meant for the client and pass with
 * their code. Anything else still reaches the client as "Unexpected error." and is logged in full.
 */
export function maskError(error: unknown, message: string, isDev?: boolean): Error {
  const appError = appErrorOf(error);
  if (appError) return toGraphqlError(appError, error instanceof GraphQLError ? error : undefined);
  return maskUnexpected(error, message, isDev);
}

/** True for errors a client caused (4xx): logged at debug level, not as server errors. */
export function isClientError(error: unknown): boolean {
  const appError = appErrorOf(error);
  return appError !== undefined && httpStatusOf[appError.code] < 500;
}

/**
 * The error of a field whose scope check failed, worded as REST words it: no key is
 * UNAUTHENTICATED, a key without the field's scope is FORBIDDEN naming the scope.
 */
export function authFailureError(viewer: Viewer | null, failure: AuthFailure): AppError {
  if (!viewer) return new AppError('unauthorized', 'Missing API key: send Authorization: Bearer <API_KEY>');
  const [scope] = failedScopes(failure);
  if (scope) return new AppError('forbidden', `API key lacks the '${scope}' scope`);
  return new AppError('forbidden', 'This API key may not use this field');
}

function failedScopes(failure: AuthFailure): Scope[] {
  switch (failure.kind) {
    case AuthScopeFailureType.AuthScope:
      return ALL_SCOPES.includes(failure.scope as Scope) ? [failure.scope as Scope] : [];
    case AuthScopeFailureType.AnyAuthScopes:
    case AuthScopeFailureType.AllAuthScopes:
      return failure.failures.flatMap(failedScopes);
    case AuthScopeFailureType.AuthScopeFunction:
    case AuthScopeFailureType.GrantedScope:
    case AuthScopeFailureType.Unknown:
      return [];
  }
}
