import { sql } from 'kysely';
import type { Scope } from '../../domain/auth/api-key.js';
import type { ApiKeyInfo, ApiKeyStore } from '../../domain/auth/api-keys.service.js';
import { compiledQuery } from './compiled-queries.js';
import type { Db } from './db.js';
import type { KeyUseNotes } from './key-use-notes.js';

/**
 * Keys in Postgres. Last-use notes go through `useNotes` (written in the background, in batches);
 * `list` writes the notes taken so far before it reads, so an owner sees the use that just happened.
 */
export function createApiKeyStore(db: Db, useNotes: KeyUseNotes): ApiKeyStore {
  return {
    insertWithinLimit: (accountId, key, max) =>
      db.transaction().execute(async (trx) => {
        // The account row is the lock: concurrent creations for one account queue here.
        await trx
          .selectFrom('accounts')
          .select('id')
          .where('id', '=', accountId)
          .forUpdate()
          .executeTakeFirstOrThrow();
        const { active } = await trx
          .selectFrom('api_keys')
          .select(sql<number>`count(*)::int`.as('active'))
          .where('account_id', '=', accountId)
          .where('revoked_at', 'is', null)
          .executeTakeFirstOrThrow();
        if (active >= max) return 'limit' as const;
        const row = await trx
          .insertInto('api_keys')
          .values({ id: key.id, account_id: accountId, key_hash: key.hash, scopes: key.scopes })
          .returning(['id', 'scopes', 'created_at', 'last_used_at', 'revoked_at'])
          .executeTakeFirstOrThrow();
        return toInfo(row);
      }),
    find: findApiKeyOn(db),
    list: async (accountId) => {
      await useNotes.flush();
      return (
        await db
          .selectFrom('api_keys')
          .select(['id', 'scopes', 'created_at', 'last_used_at', 'revoked_at'])
          .where('account_id', '=', accountId)
          .orderBy('created_at')
          .execute()
      ).map(toInfo);
    },
    revoke: async (id, accountId, at) => {
      let query = db
        .updateTable('api_keys')
        .set({ revoked_at: at })
        .where('id', '=', id)
        .where('revoked_at', 'is', null);
      if (accountId !== null) query = query.where('account_id', '=', accountId);
      const result = await query.executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
    noteUse: (id, at) => useNotes.note(id, at),
  };
}

/** Compiled once (compiled-queries.ts): every request with a key the cache does not hold runs it. */
const keyById = compiledQuery((db, v: { id: string }) =>
  db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .select([
      'api_keys.id',
      'api_keys.account_id',
      'api_keys.key_hash',
      'api_keys.scopes',
      'api_keys.created_at',
      'api_keys.last_used_at',
      'api_keys.revoked_at',
      'accounts.role',
      'accounts.handle',
      'accounts.wallet_address',
    ])
    .where('api_keys.id', '=', v.id),
);

/** A key with its account's role, handle and wallet, on whichever pool `db` is (the API's read pool). */
export function findApiKeyOn(db: Db): ApiKeyStore['find'] {
  return async (id) => {
    const [row] = await keyById(db, { id });
    return (
      row && {
        ...toInfo(row),
        accountId: row.account_id,
        hash: row.key_hash,
        accountRole: row.role,
        accountHandle: row.handle,
        accountWallet: row.wallet_address,
      }
    );
  };
}

function toInfo(row: {
  id: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}): ApiKeyInfo {
  return {
    id: row.id,
    scopes: row.scopes as Scope[],
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}
