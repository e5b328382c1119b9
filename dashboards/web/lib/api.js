import { apiKey } from './session.js';

/** An error the API answered, with its code (GraphQL extensions.code or the REST `error`). */
export class ApiError extends Error {
  constructor(code, message, status, details = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
    /** The rest of the error: GraphQL extensions or the REST body (e.g. balanceTokens on a 402). */
    this.details = details;
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
    throw new ApiError(first.extensions?.code ?? 'error', first.message, response.status, first.extensions);
  }
  return body.data;
}

/**
 * A REST call under /api/v1 (sign-up, the CSV report, report runs). `headers` adds to the key and
 * content headers (an Idempotency-Key).
 */
export async function rest(method, path, { body, accept = 'application/json', headers = {} } = {}) {
  return restAt(`/api/v1${path}`, method, { body, accept, headers });
}

async function restAt(url, method, { body, accept, headers = {} }) {
  let response;
  try {
    response = await fetch(url, {
      method,
      headers: authHeaders({
        accept,
        ...headers,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      }),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError('network', 'The API could not be reached. Check your connection and retry.', 0);
  }
  if (!response.ok) {
    const error = await response.json().catch(() => ({}));
    throw new ApiError(
      error.error ?? 'error',
      error.message ?? `HTTP ${response.status}`,
      response.status,
      error,
    );
  }
  return response;
}

export const VIEWER_QUERY = `{ viewer { handle displayName role walletAddress earnedUsdc pendingUsdc totalEarned totalSpent } }`;
