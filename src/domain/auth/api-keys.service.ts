import type { AccountRole } from '../accounts/account.js';
import { AppError } from '../errors.js';
import { ALL_SCOPES, generateApiKey, lookupIdOf, MAX_ACTIVE_KEYS, type Scope } from './api-key.js';
import { createTouchThrottle } from './touch-throttle.js';
import { createVerifiedKeys } from './verified-keys.js';

export interface ApiKeyInfo {
  id: string;
  scopes: Scope[];
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface StoredApiKey extends ApiKeyInfo {
  accountId: string;
  hash: Buffer;
  accountRole: AccountRole;
  accountHandle: string;
  accountWallet: string | null;
}

export interface ApiKeyStore {
  /**
   * Inserts the key unless the account already holds `max` active keys, deciding under a lock on
   * the account so two concurrent requests cannot both take the last slot.
   */
  insertWithinLimit(
    accountId: string,
    key: { id: string; hash: Buffer; scopes: Scope[] },
    max: number,
  ): Promise<ApiKeyInfo | 'limit'>;
  /** The key with its account's role and handle, revoked or not. */
  find(id: string): Promise<StoredApiKey | undefined>;
  /**
   * What find() would answer, when a store that keeps keys in memory may answer it without a
   * lookup; undefined when it may not (not held, or held past what may be answered): call find().
   */
  findNow?(id: string): StoredApiKey | undefined;
  /** The account's keys; their last-use times include every use noted before the call. */
  list(accountId: string): Promise<ApiKeyInfo[]>;
  /** Revokes the key if it belongs to `accountId` (any account when null); false when none matched. */
  revoke(id: string, accountId: string | null, at: Date): Promise<boolean>;
  /**
   * Notes that the key was used at `at`. It may be written later, with other keys' notes: a
   * request never waits for it (nor fails with it).
   */
  noteUse(id: string, at: Date): void;
}

/** Who is calling: the account behind a valid key, and what that key may do. */
export interface Viewer {
  accountId: string;
  handle: string;
  /** The account's custodial wallet (null only while it is being provisioned). */
  walletAddress: string | null;
  role: AccountRole;
  keyId: string;
  scopes: ReadonlySet<Scope>;
}

/**
 * A new key for the account. `grantor` is the key making the request (API callers): it must hold
 * every scope, because a key that can mint keys can mint one with every scope, and with the
 * 2-key limit a lesser key could otherwise fill the slots and lock its owner out. The CLI (the
 * operator) and sign-up pass none.
 */
export async function createApiKey(
  store: ApiKeyStore,
  accountId: string,
  scopes: readonly Scope[] = ALL_SCOPES,
  grantor?: Pick<Viewer, 'scopes'>,
): Promise<{ key: string; info: ApiKeyInfo }> {
  if (grantor) requireFullKey(grantor, 'Creating API keys');
  const generated = generateApiKey();
  const info = await store.insertWithinLimit(
    accountId,
    { id: generated.id, hash: generated.hash, scopes: [...scopes] },
    MAX_ACTIVE_KEYS,
  );
  if (info === 'limit') {
    throw new AppError(
      'conflict',
      `An account may hold at most ${MAX_ACTIVE_KEYS} API keys: revoke one before creating another`,
    );
  }
  return { key: generated.key, info };
}

/**
 * Revokes one of the account's keys (any account's when `accountId` is null: the operator).
 * `revoker` is the key making the request: revoking another key needs a key holding every scope,
 * so a leaked read-only key cannot revoke its owner's full key; any key may revoke itself, which
 * only takes power away. Checked before the lookup, so a lesser key cannot probe key ids either.
 */
export async function revokeApiKey(
  store: ApiKeyStore,
  id: string,
  accountId: string | null,
  revoker?: Pick<Viewer, 'scopes' | 'keyId'>,
): Promise<void> {
  if (revoker && revoker.keyId !== id) requireFullKey(revoker, 'Revoking another API key');
  if (!(await store.revoke(id, accountId, new Date())))
    throw new AppError('not_found', `No active API key ${id}`);
}

/** Whether the key holds every scope there is: the account's own key, as sign-up hands it out. */
export function isFullKey(viewer: Pick<Viewer, 'scopes'>): boolean {
  return ALL_SCOPES.every((scope) => viewer.scopes.has(scope));
}

/**
 * 403 unless the key holds every scope. For what takes over an account (its keys, its handle):
 * scopes limit what a leaked or delegated key can do, and these would undo that limit.
 */
export function requireFullKey(viewer: Pick<Viewer, 'scopes'>, action: string): void {
  const missing = ALL_SCOPES.filter((scope) => !viewer.scopes.has(scope));
  if (missing.length > 0) {
    throw new AppError(
      'forbidden',
      `API key lacks the ${missing.map((s) => `'${s}'`).join(', ')} scope${missing.length > 1 ? 's' : ''}: ${action} needs a key holding every scope (${ALL_SCOPES.join(', ')})`,
    );
  }
}

/** Last-use times are written at most this often per key, not on every request. */
const TOUCH_INTERVAL_MS = 60_000;
/** Keys whose last write is remembered; beyond it the oldest are forgotten (an extra write each). */
const TOUCH_MAX_ENTRIES = 10_000;
const lastTouched = createTouchThrottle({ intervalMs: TOUCH_INTERVAL_MS, maxEntries: TOUCH_MAX_ENTRIES });

/** Keys whose hash is remembered after they matched; beyond it the oldest are forgotten. */
const VERIFIED_MAX_ENTRIES = 10_000;
const verified = createVerifiedKeys(VERIFIED_MAX_ENTRIES);

/**
 * Resolves `Authorization: Bearer <key>` to a Viewer. Missing and invalid keys are both 401
 * `unauthorized`; the message says which, never why a key is invalid.
 */
export async function authenticate(store: ApiKeyStore, authorization: string | undefined): Promise<Viewer> {
  if (!authorization)
    throw new AppError('unauthorized', 'Missing API key: send Authorization: Bearer <API_KEY>');
  const presented = bearerKey(authorization);
  const stored = presented ? await store.find(presented.id) : undefined;
  const viewer = presented && stored && viewerOf(store, presented.key, stored);
  if (!viewer) throw new AppError('unauthorized', 'Invalid API key');
  return viewer;
}

/**
 * authenticate() without waiting, for answers given from memory (the kept feed pages): the Viewer
 * when the key's row is held in memory (ApiKeyStore.findNow) and the key is valid; undefined
 * otherwise, and authenticate() decides (looking the row up, answering a bad key's error). The
 * same checks in the same order: only the lookup's wait is left out.
 */
export function authenticateNow(store: ApiKeyStore, authorization: string | undefined): Viewer | undefined {
  const presented = authorization ? bearerKey(authorization) : undefined;
  const stored = presented && store.findNow?.(presented.id);
  return (presented && stored && viewerOf(store, presented.key, stored)) || undefined;
}

/** The key of `Bearer <key>` and the id to look it up by; undefined when it is not one. */
function bearerKey(authorization: string): { key: string; id: string } | undefined {
  const key = /^Bearer\s+(\S+)$/i.exec(authorization.trim())?.[1];
  const id = key ? lookupIdOf(key) : undefined;
  return key && id ? { key, id } : undefined;
}

/**
 * The Viewer of a presented key and its stored row, or undefined when the key is revoked or is not
 * the one the row was made from. One Viewer per stored row: a cached row serves thousands of
 * requests a second, and a Viewer is never changed after it is made.
 */
function viewerOf(store: ApiKeyStore, key: string, stored: StoredApiKey): Viewer | undefined {
  if (stored.revokedAt || !verified.matches(key, stored.hash)) return undefined;
  const now = Date.now();
  if (lastTouched.shouldTouch(stored.id, now)) store.noteUse(stored.id, new Date(now));
  let viewer = viewers.get(stored);
  if (!viewer) {
    viewer = {
      accountId: stored.accountId,
      handle: stored.accountHandle,
      walletAddress: stored.accountWallet,
      role: stored.accountRole,
      keyId: stored.id,
      scopes: new Set(stored.scopes),
    };
    viewers.set(stored, viewer);
  }
  return viewer;
}

const viewers = new WeakMap<StoredApiKey, Viewer>();

/** 403 unless the key carries `scope`. */
export function requireScope(viewer: Viewer, scope: Scope): void {
  if (!viewer.scopes.has(scope)) throw new AppError('forbidden', `API key lacks the '${scope}' scope`);
}
