import { describe, expect, test } from 'vitest';
import { generateApiKey } from './api-key.js';
import { authenticate, authenticateNow, type ApiKeyStore, type StoredApiKey } from './api-keys.service.js';

/** A store holding one row, in memory or not (findNow), as the cached store does (identity-stores.ts). */
function storeWith(row: StoredApiKey, held: boolean): ApiKeyStore & { uses: string[] } {
  const uses: string[] = [];
  return {
    uses,
    insertWithinLimit: () => Promise.reject(new Error('not used')),
    find: (id) => Promise.resolve(id === row.id ? row : undefined),
    findNow: (id) => (held && id === row.id ? row : undefined),
    list: () => Promise.resolve([]),
    revoke: () => Promise.resolve(false),
    noteUse: (id) => uses.push(id),
  };
}

function storedRow(overrides: Partial<StoredApiKey> = {}) {
  const generated = generateApiKey();
  const row: StoredApiKey = {
    id: generated.id,
    scopes: ['read'],
    createdAt: new Date(),
    lastUsedAt: null,
    revokedAt: null,
    accountId: 'account-1',
    hash: generated.hash,
    accountRole: 'user',
    accountHandle: 'alice',
    accountWallet: null,
    ...overrides,
  };
  return { key: generated.key, row };
}

describe('authenticateNow', () => {
  test('gives the viewer authenticate() gives when the row is held, the same object for the same row', async () => {
    const { key, row } = storedRow();
    const store = storeWith(row, true);
    const now = authenticateNow(store, `Bearer ${key}`);
    expect(now).toEqual(await authenticate(store, `Bearer ${key}`));
    expect(now).toMatchObject({ accountId: 'account-1', handle: 'alice', keyId: row.id });
    expect([...now!.scopes]).toEqual(['read']);
    expect(authenticateNow(store, `Bearer ${key}`)).toBe(now);
    // The use is noted (once per interval) as on the awaited path.
    expect(store.uses).toEqual([row.id]);
  });

  test('leaves everything else to authenticate(): a row not held, a bad, revoked or missing key', async () => {
    const { key, row } = storedRow();
    expect(authenticateNow(storeWith(row, false), `Bearer ${key}`)).toBeUndefined();
    const held = storeWith(row, true);
    expect(authenticateNow(held, undefined)).toBeUndefined();
    expect(authenticateNow(held, key)).toBeUndefined(); // no Bearer
    // Same lookup id, other secret: the row is found, the key does not match it.
    const forged = `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    expect(authenticateNow(held, `Bearer ${forged}`)).toBeUndefined();
    await expect(authenticate(held, `Bearer ${forged}`)).rejects.toMatchObject({ code: 'unauthorized' });

    const revoked = storedRow({ revokedAt: new Date() });
    const store = storeWith(revoked.row, true);
    expect(authenticateNow(store, `Bearer ${revoked.key}`)).toBeUndefined();
    await expect(authenticate(store, `Bearer ${revoked.key}`)).rejects.toMatchObject({
      code: 'unauthorized',
    });

    const plain: ApiKeyStore = { ...held, findNow: undefined };
    expect(authenticateNow(plain, `Bearer ${key}`)).toBeUndefined();
  });
});
