import type { Scope } from '../domain/auth/api-key.js';
import { authenticate, authenticateNow, requireScope, type Viewer } from '../domain/auth/api-keys.service.js';
import type { RateLimitBucket } from '../domain/rate-limits/rate-limit-policy.js';
import type { ApiDeps } from '../app/api-deps.js';
import { clientSubject } from './client-subject.js';
import { spend, type HeaderSink } from './rate-limit-spend.js';

/** What a route asks of its callers: a scope (none: public) and the bucket it spends from. */
export interface Admission {
  scope?: Scope | undefined;
  bucket?: RateLimitBucket | undefined;
}

/** What a request presents: its Authorization header and the client IP (for public routes' buckets). */
export interface Presented {
  authorization: string | undefined;
  clientIp: string;
}

/**
 * Admits a request to a route, in the order a client can act on: 401 (who are you), 403 (what may
 * this key do), then 429 (how fast), with the RateLimit headers set on `headers`. Rate limits count
 * per account, so a second key does not double the budget; public routes count per client IP.
 * The one implementation for every /api/v1 route (rest/auth.hook.ts) and for the cached reads
 * answered before Fastify (cached-reads/), so the two cannot drift.
 */
export async function admit(
  deps: Pick<ApiDeps, 'apiKeys' | 'rateLimiter'>,
  presented: Presented,
  route: Admission,
  headers: HeaderSink | undefined,
): Promise<Viewer | undefined> {
  let viewer: Viewer | undefined;
  let subject = clientSubject(presented.clientIp);
  if (route.scope) {
    viewer = await authenticate(deps.apiKeys, presented.authorization);
    requireScope(viewer, route.scope);
    subject = viewer.accountId;
  }
  if (route.bucket) await spend(deps, headers, route.bucket, subject);
  return viewer;
}

/**
 * admit()'s answer when it needs no I/O: the key's row is in memory, it carries the scope, and the
 * bucket is not counted (rate limits off). Undefined otherwise, errors included: then admit().
 * Nothing is awaited, so a cached read admitted here costs no promise (cached-reads/).
 */
export function admitNow(
  deps: Pick<ApiDeps, 'apiKeys' | 'rateLimiter'>,
  authorization: string | undefined,
  route: Admission & { scope: Scope },
): Viewer | undefined {
  if (route.bucket && deps.rateLimiter.counts(route.bucket)) return undefined;
  const viewer = authenticateNow(deps.apiKeys, authorization);
  return viewer?.scopes.has(route.scope) ? viewer : undefined;
}
