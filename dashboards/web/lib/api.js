import { apiKey } from './session.js';

/** An error the API answered, with its code (GraphQL extensions.code or the REST `error`). */
export class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
  }
}

function authHeaders(extra = {}) {
  const key = apiKey();
  return key ? { authorization: `Bearer ${key}`, ...extra } : extra;
}

/** One GraphQL operation against our own /graphql; the first error is thrown as an ApiError. */
export async function gql(query, variables = {}) {
  let response;
  try {
    response = await fetch('/graphql', {
      method: 'POST',
      headers: authHeaders({
        'content-type': 'application/json',
        accept: 'application/graphql-response+json',
      }),
      body: JSON.stringify({ query, variables }),
    });
  } catch {
    throw new ApiError('network', 'The API could not be reached. Check your connection and retry.', 0);
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new ApiError('internal', `The API answered ${response.status} without JSON`, response.status);
  }
  const first = body.errors?.[0];
  if (first) {
    throw new ApiError(first.extensions?.code ?? 'error', first.message, response.status);
  }
  return body.data;
}

/** A REST call under /api/v1 (sign-up, the CSV report). */
export async function rest(method, path, { body, accept = 'application/json' } = {}) {
  let response;
  try {
    response = await fetch(`/api/v1${path}`, {
      method,
      headers: authHeaders({ accept, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError('network', 'The API could not be reached. Check your connection and retry.', 0);
  }
  if (!response.ok) {
    const error = await response.json().catch(() => ({}));
    throw new ApiError(error.error ?? 'error', error.message ?? `HTTP ${response.status}`, response.status);
  }
  return response;
}

const fieldsCache = new Map();

/**
 * The field names of a GraphQL type, by introspection (cached per page). Pages use it to show a
 * feature only once the server has it: an unknown type answers an empty set.
 */
export async function fieldsOf(typeName) {
  if (!fieldsCache.has(typeName)) {
    fieldsCache.set(
      typeName,
      gql('query ($name: String!) { __type(name: $name) { fields { name } } }', { name: typeName }).then(
        (data) => new Set((data.__type?.fields ?? []).map((f) => f.name)),
        () => new Set(),
      ),
    );
  }
  return fieldsCache.get(typeName);
}

export const VIEWER_QUERY = `{ viewer { handle displayName role walletAddress earnedUsdc pendingUsdc totalEarned totalSpent } }`;
