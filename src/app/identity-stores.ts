import type { AccountStore } from '../domain/accounts/accounts.service.js';
import type { ApiKeyStore, StoredApiKey } from '../domain/auth/api-keys.service.js';
import type { ChangeSignals } from './change-signals.js';
import { createReadCache } from './read-cache.js';

/** How long a looked-up key may be reused without a change signal (a lost pub/sub message). */
const KEY_CACHE_TTL_MS = 5_000;
const KEY_CACHE_MAX_ENTRIES = 10_000;

/**
 * The API key store with its lookups cached in process: every authenticated request needs the
 * key's row, and a Postgres round trip per request was most of a cached feed read's cost.
 *
 * The cache holds the stored row (hash included), so authenticate() still checks the presented
 * key against the hash on every request; only the lookup is saved. Revoking here clears this
 * process at once and every other process through the `identity` signal; unknown ids are not
 * cached, so guessing ids cannot push real keys out.
 */
export function cachedApiKeyStore(
  store: ApiKeyStore,
  signals: ChangeSignals,
  ttlMs = KEY_CACHE_TTL_MS,
): ApiKeyStore {
  const found = createReadCache<StoredApiKey | undefined>(signals, {
    topics: ['identity'],
    ttlMs,
    maxEntries: KEY_CACHE_MAX_ENTRIES,
  });
  return {
    ...store,
    find: async (id) => {
      const key = await found.get(id, () => store.find(id));
      if (!key) found.delete(id);
      return key;
    },
    revoke: async (id, accountId, at) => {
      const revoked = await store.revoke(id, accountId, at);
      signals.changed('identity');
      return revoked;
    },
  };
}

/**
 * The account store, telling the key caches when an account changes: a viewer carries its
 * account's handle, so a renamed account must not keep its old handle in a cached key row. The
 * role and wallet are set when the account is created and never change afterwards.
 */
export function signallingAccountStore(
  store: AccountStore,
  signals: Pick<ChangeSignals, 'changed'>,
): AccountStore {
  return {
    ...store,
    update: async (id, changes) => {
      const account = await store.update(id, changes);
      signals.changed('identity');
      return account;
    },
  };
}
