import { sql, type Selectable } from 'kysely';
import type { Account } from '../../domain/accounts/account.js';
import { handleTaken, type AccountStore } from '../../domain/accounts/accounts.service.js';
import type { AccountsTable } from './database.js';
import type { Db } from './db.js';

const UNIQUE_VIOLATION = '23505';

export function toAccount(row: Selectable<AccountsTable>): Account {
  return {
    id: row.id,
    handle: row.handle,
    displayName: row.display_name,
    bio: row.bio,
    avatarUrl: row.avatar_url,
    socialUsername: row.social_username,
    role: row.role,
    walletAddress: row.wallet_address ?? '',
    handleChangedAt: row.handle_changed_at,
    createdAt: row.created_at,
  };
}

/** The accounts among `ids`, in one statement (the GraphQL per-request author loader batches into it). */
export async function accountsByIds(db: Db, ids: readonly string[]): Promise<Map<string, Account>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('accounts')
    .selectAll()
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((row) => [row.id, toAccount(row)]));
}

export function createAccountStore(db: Db): AccountStore {
  const rethrowHandleTaken = (handle: string) => (error: unknown) => {
    const pgError = error as { code?: string; constraint?: string };
    if (pgError.code === UNIQUE_VIOLATION && pgError.constraint?.includes('handle'))
      throw handleTaken(handle);
    throw error;
  };
  return {
    insert: async (input) => {
      const row = await db
        .insertInto('accounts')
        .values({
          handle: input.handle,
          display_name: input.displayName,
          role: input.role,
          wallet_address: input.walletAddress,
          wallet_secret: input.walletSecret,
        })
        .returningAll()
        .executeTakeFirstOrThrow()
        .catch(rethrowHandleTaken(input.handle));
      return toAccount(row);
    },
    byId: async (id) => {
      const row = await db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
      return row && toAccount(row);
    },
    byHandle: async (handle) => {
      const row = await db.selectFrom('accounts').selectAll().where('handle', '=', handle).executeTakeFirst();
      return row && toAccount(row);
    },
    byWalletAddress: async (address) => {
      const row = await db
        .selectFrom('accounts')
        .selectAll()
        .where('wallet_address', '=', address)
        .executeTakeFirst();
      return row && toAccount(row);
    },
    update: async (id, changes) => {
      const row = await db
        .updateTable('accounts')
        .set({
          ...(changes.handle !== undefined ? { handle: changes.handle } : {}),
          ...(changes.handleChangedAt !== undefined ? { handle_changed_at: changes.handleChangedAt } : {}),
          ...(changes.displayName !== undefined ? { display_name: changes.displayName } : {}),
          ...(changes.bio !== undefined ? { bio: changes.bio } : {}),
          updated_at: new Date(),
        })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow()
        .catch(rethrowHandleTaken(changes.handle ?? ''));
      return toAccount(row);
    },
    stats: async (id) => {
      const row = await db
        .selectNoFrom([
          sql<number>`(SELECT count(*)::int FROM follows WHERE followee_id = ${id})`.as('followers'),
          sql<number>`(SELECT count(*)::int FROM follows WHERE follower_id = ${id})`.as('following'),
        ])
        .executeTakeFirstOrThrow();
      // Posts arrive with the write-path issue; until then an account has none.
      return { followerCount: row.followers, followingCount: row.following, postCount: 0 };
    },
  };
}
