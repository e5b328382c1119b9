import type { AccountRole } from '../accounts/account.js';
import { AppError } from '../errors.js';
import {
  ALL_SCOPES,
  generateApiKey,
  keyMatches,
  lookupIdOf,
  MAX_ACTIVE_KEYS,
  type Scope,
} from './api-key.js';

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
  list(accountId: string): Promise<ApiKeyInfo[]>;
  /** Revokes the key if it belongs to `accountId` (any account when null); false when none matched. */
  revoke(id: string, accountId: string | null, at: Date): Promise<boolean>;
  touch(id: string, at: Date): Promise<void>;
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
 * A new key for the account. `grantor` is the key making the request (API callers); it can only
 * hand out scopes it holds itself, so a read-only key cannot mint a key that sends money. The CLI
 * (the operator) passes none.
 */
export async function createApiKey(
  store: ApiKeyStore,
  accountId: string,
  scopes: readonly Scope[] = ALL_SCOPES,
  grantor?: Pick<Viewer, 'scopes'>,
): Promise<{ key: string; info: ApiKeyInfo }> {
  const beyond = grantor ? scopes.find((scope) => !grantor.scopes.has(scope)) : undefined;
  if (beyond) {
    throw new AppError(
      'forbidden',
      `API key lacks the '${beyond}' scope: a key can only create keys with scopes it holds`,
    );
  }
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

export async function revokeApiKey(store: ApiKeyStore, id: string, accountId: string | null): Promise<void> {
  if (!(await store.revoke(id, accountId, new Date())))
    throw new AppError('not_found', `No active API key ${id}`);
}

/** Last-use times are written at most this often per key, not on every request. */
const TOUCH_INTERVAL_MS = 60_000;
const lastTouched = new Map<string, number>();

/**
 * Resolves `Authorization: Bearer <key>` to a Viewer. Missing and invalid keys are both 401
 * `unauthorized`; the message says which, never why a key is invalid.
 */
export async function authenticate(store: ApiKeyStore, authorization: string | undefined): Promise<Viewer> {
  if (!authorization)
    throw new AppError('unauthorized', 'Missing API key: send Authorization: Bearer <API_KEY>');
  const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
  const key = match?.[1];
  const id = key ? lookupIdOf(key) : undefined;
  const stored = id ? await store.find(id) : undefined;
  if (!key || !stored || stored.revokedAt || !keyMatches(key, stored.hash)) {
    throw new AppError('unauthorized', 'Invalid API key');
  }
  const now = Date.now();
  if (now - (lastTouched.get(stored.id) ?? 0) > TOUCH_INTERVAL_MS) {
    lastTouched.set(stored.id, now);
    await store.touch(stored.id, new Date(now));
  }
  return {
    accountId: stored.accountId,
    handle: stored.accountHandle,
    walletAddress: stored.accountWallet,
    role: stored.accountRole,
    keyId: stored.id,
    scopes: new Set(stored.scopes),
  };
}

/** 403 unless the key carries `scope`. */
export function requireScope(viewer: Viewer, scope: Scope): void {
  if (!viewer.scopes.has(scope)) throw new AppError('forbidden', `API key lacks the '${scope}' scope`);
}
