import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import {
  authenticate,
  requireFullKey,
  type ApiKeyStore,
  type Viewer,
} from '../../domain/auth/api-keys.service.js';
import { AppError } from '../../domain/errors.js';

/**
 * The operator pages (bull-board at /admin/queues) are plain browser navigations: they cannot send
 * an Authorization header. An admin signs in to the portal with their API key; the portal trades
 * it (POST /dashboard/session) for this cookie: the key's id and an expiry, HMAC-signed, HttpOnly,
 * SameSite=Strict (no other site can make the browser use it, so bull-board's retry/clean buttons
 * cannot be triggered cross-site), scoped to /admin. The key itself never enters a cookie.
 * Every request re-reads the key, so revoking it (or taking the admin role away) ends the session
 * at once; the expiry bounds a forgotten tab. Only an admin's key holding every scope opens the
 * pages or the session (requireOperatorKey), checked again on every request.
 */

export const ADMIN_COOKIE = 'lf_admin';
export const ADMIN_SESSION_SECONDS = 15 * 60;
export const ADMIN_COOKIE_PATH = '/admin';

/** A key of its own for the cookie, derived from the cursor secret (itself from WALLET_MASTER_KEY). */
function cookieKey(secret: string): Buffer {
  return createHmac('sha256', secret).update('ledgerfeed admin session cookie v1').digest();
}

export function signAdminSession(secret: string, keyId: string, expiresAt: Date): string {
  const payload = `${keyId}.${Math.floor(expiresAt.getTime() / 1000)}`;
  const mac = createHmac('sha256', cookieKey(secret)).update(payload).digest('base64url');
  return `${payload}.${mac}`;
}

/** The key id of a genuine, unexpired cookie value; undefined otherwise. */
export function verifyAdminSession(secret: string, value: string, now = new Date()): string | undefined {
  const match = /^([A-Za-z0-9]{1,64})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!match) return undefined;
  const [, keyId, expires, mac] = match as unknown as [string, string, string, string];
  const expected = createHmac('sha256', cookieKey(secret)).update(`${keyId}.${expires}`).digest();
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  if (Number(expires) * 1000 <= now.getTime()) return undefined;
  return keyId;
}

export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The Set-Cookie value: Secure when the request came over HTTPS (behind a proxy: X-Forwarded-Proto). */
export function adminCookieHeader(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${ADMIN_COOKIE}=${value}; Path=${ADMIN_COOKIE_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`;
}

/**
 * 403 unless the key is an admin's and holds every scope. bull-board can pause, empty and retry the
 * payments queue: that is no delegated key's to do, whatever role its account has (the same rule
 * as creating API keys). `what` names the page, for the message.
 */
export function requireOperatorKey(key: Pick<Viewer, 'role' | 'scopes'>, what: string): void {
  if (key.role !== 'admin') throw new AppError('forbidden', `${what} is for the admin role`);
  requireFullKey(key, what);
}

/**
 * The admin behind the request: an `Authorization: Bearer` admin key (scripts, curl), or the
 * session cookie whose key is still active, still an admin's and holds every scope. 401 without
 * either, 403 for a key whose account is not an admin or that lacks a scope. A cookie is judged by
 * its key as it is now, not as it was when the session opened.
 */
export async function requireAdmin(
  store: ApiKeyStore,
  secret: string,
  request: FastifyRequest,
): Promise<Pick<Viewer, 'accountId' | 'keyId'>> {
  if (request.headers.authorization) {
    const viewer = await authenticate(store, request.headers.authorization);
    requireOperatorKey(viewer, 'The queue dashboard');
    return viewer;
  }
  const cookie = cookieOf(request, ADMIN_COOKIE);
  const keyId = cookie ? verifyAdminSession(secret, cookie) : undefined;
  const stored = keyId ? await store.find(keyId) : undefined;
  if (!stored || stored.revokedAt) {
    throw new AppError(
      'unauthorized',
      'Sign in at /dashboard/ with an admin API key (or send Authorization: Bearer <admin key>)',
    );
  }
  requireOperatorKey({ role: stored.accountRole, scopes: new Set(stored.scopes) }, 'The queue dashboard');
  return { accountId: stored.accountId, keyId: stored.id };
}
