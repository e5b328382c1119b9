import type { AccountStore } from '../domain/accounts/accounts.service.js';
import type { ApiKeyStore, StoredApiKey } from '../domain/auth/api-keys.service.js';
import type { FollowStore } from '../domain/follows/follows.service.js';
import type { ChangeSignals } from './change-signals.js';
import { notifyCommitted } from './commit-notifier.js';
import { createReadCache, READ_STALE_MS, type DependencyTracker } from './read-cache.js';

const KEY_CACHE_MAX_ENTRIES = 10_000;

/**
 * The API key store with its lookups cached in process: every authenticated request needs the
 * key's row, and a Postgres round trip per request was most of a cached feed read's cost.
 *
 * The cache holds the stored row (hash included), so authenticate() still checks the presented
 * key against the hash on every request; only the lookup is saved. Revoking here clears this
 * process at once and every other process through the `identity` signal, and a row that an
 * `identity` change made stale is never answered (staleMs 0): a revoked key stops at once. A row
 * that merely expired is answered for up to READ_STALE_MS more while one lookup refreshes it in
 * the background: otherwise every request of a busy key waited for that lookup once a TTL, behind
 * whatever else held the pool. Unknown ids are not cached, so guessing ids cannot push real keys
 * out. `ttlMs` is READ_CACHE_TTL_MS: 0 looks every key up every time.
 */
export function cachedApiKeyStore(store: ApiKeyStore, signals: ChangeSignals, ttlMs: number): ApiKeyStore {
  const found = createReadCache<StoredApiKey | undefined>(signals, {
    ttlMs,
    maxEntries: KEY_CACHE_MAX_ENTRIES,
    staleMs: 0,
    expiredMs: READ_STALE_MS,
    refresh: 'background',
  });
  const lookUp = (id: string) => async (track: DependencyTracker) => {
    track.reads('identity');
    const key = await store.find(id);
    if (!key) track.keepNot();
    return key;
  };
  return {
    ...store,
    find: (id) => found.get(id, lookUp(id)),
    // No viewer: a key row is the same for everyone. A row past its time-to-live is still answered
    // within READ_STALE_MS while one lookup refreshes it, as find() does.
    findNow: (id) => found.answerNow(id, undefined, lookUp(id)),
    revoke: async (id, accountId, at) => {
      const revoked = await store.revoke(id, accountId, at);
      found.delete(id);
      notifyCommitted({ changes: signals }, { kind: 'key-revoked' });
      return revoked;
    },
  };
}

/**
 * The account store, telling the read caches what an account change touched: its profile and the
 * author fields shown beside its posts (`account:<id>`), a handle that now names an account
 * (`handle:<h>`: a cached "no such user" must go), and the key caches (`identity`): a viewer
 * carries its account's handle, so a renamed account must not keep its old handle in a cached key
 * row. The role and wallet are set when the account is created and never change afterwards.
 */
export function signallingAccountStore(
  store: AccountStore,
  signals: Pick<ChangeSignals, 'changed'>,
): AccountStore {
  return {
    ...store,
    insert: async (row) => {
      const account = await store.insert(row);
      notifyCommitted({ changes: signals }, { kind: 'account-created', handle: account.handle });
      return account;
    },
    update: async (id, changes) => {
      const account = await store.update(id, changes);
      notifyCommitted(
        { changes: signals },
        { kind: 'account-updated', accountId: id, handle: changes.handle },
      );
      return account;
    },
  };
}

/**
 * The follow store, telling the read caches that both accounts' counts and follow lists moved.
 * Following twice or unfollowing a stranger writes nothing, but is signalled anyway: the store
 * does not say, and a refresh of two profiles costs little.
 */
export function signallingFollowStore(
  store: FollowStore,
  signals: Pick<ChangeSignals, 'changed'>,
): FollowStore {
  return {
    ...store,
    follow: async (followerId, followeeId) => {
      await store.follow(followerId, followeeId);
      notifyCommitted({ changes: signals }, { kind: 'follows-changed', followerId, followeeId });
    },
    unfollow: async (followerId, followeeId) => {
      await store.unfollow(followerId, followeeId);
      notifyCommitted({ changes: signals }, { kind: 'follows-changed', followerId, followeeId });
    },
  };
}
