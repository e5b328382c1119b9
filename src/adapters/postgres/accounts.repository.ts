import { sql, type Selectable, type Transaction } from 'kysely';
import type { Account } from '../../domain/accounts/account.js';
import {
  handleReserved,
  handleTaken,
  type AccountStore,
  type ProfileChanges,
} from '../../domain/accounts/accounts.service.js';
import { AppError } from '../../domain/errors.js';
import type { AccountsTable, Database } from './database.js';
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
        .transaction()
        .execute(async (trx) => {
          await claimHandles(trx, [input.handle]);
          await refuseReserved(trx, input.handle, null);
          return trx
            .insertInto('accounts')
            .values({
              handle: input.handle,
              display_name: input.displayName,
              role: input.role,
              wallet_address: input.walletAddress,
              wallet_secret: input.walletSecret,
            })
            .returningAll()
            .executeTakeFirstOrThrow();
        })
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
      if (changes.handle !== undefined) {
        const newHandle = changes.handle;
        const row = await db
          .transaction()
          .execute(async (trx) => {
            const released = changes.releasedHandle;
            await claimHandles(trx, released ? [newHandle, released.handle] : [newHandle]);
            const current = await trx
              .selectFrom('accounts')
              .select('handle')
              .where('id', '=', id)
              .forUpdate()
              .executeTakeFirstOrThrow();
            // The service decided the reservations from the handle it read; a concurrent rename of
            // the same account would make them wrong.
            if (released && current.handle !== released.handle)
              throw new AppError('conflict', 'The handle changed meanwhile: read the profile and try again');
            await refuseReserved(trx, newHandle, id);
            // Taken now: the own reservation (an undo) or an expired one of anybody is done.
            await trx.deleteFrom('released_handles').where('handle', '=', newHandle).execute();
            if (released) {
              await trx
                .insertInto('released_handles')
                .values({ handle: released.handle, account_id: id, reserved_until: released.reservedUntil })
                .onConflict((oc) =>
                  oc.column('handle').doUpdateSet({
                    account_id: id,
                    released_at: sql<Date>`now()`,
                    reserved_until: released.reservedUntil,
                  }),
                )
                .execute();
            }
            return updateRow(trx, id, changes);
          })
          .catch(rethrowHandleTaken(newHandle));
        return toAccount(row);
      }
      const row = await updateRow(db, id, changes);
      return toAccount(row);
    },
    handleReservation: async (handle) => {
      const row = await db
        .selectFrom('released_handles')
        .select(['handle', 'account_id', 'reserved_until'])
        .where('handle', '=', handle)
        .executeTakeFirst();
      return row && { handle: row.handle, accountId: row.account_id, reservedUntil: row.reserved_until };
    },
    stats: async (id) => {
      // Stored on the account row, kept by the database with the rows they count (posts,
      // follows): a profile read costs one primary-key lookup, however many followers.
      const row = await db
        .selectFrom('accounts')
        .select(['post_count', 'follower_count', 'following_count'])
        .where('id', '=', id)
        .executeTakeFirst();
      return {
        followerCount: row?.follower_count ?? 0,
        followingCount: row?.following_count ?? 0,
        postCount: row?.post_count ?? 0,
      };
    },
  };
}

function updateRow(db: Db | Transaction<Database>, id: string, changes: ProfileChanges) {
  return db
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
    .executeTakeFirstOrThrow();
}

/**
 * Serialises everything that takes or releases these handles until the transaction ends. Without
 * it a sign-up could check for a reservation, find none, and then insert the handle that a
 * concurrent rename was releasing (the unique index lets the insert through once the rename
 * commits). Sorted, so two renames that swap handles cannot deadlock.
 */
async function claimHandles(trx: Transaction<Database>, handles: string[]): Promise<void> {
  for (const handle of [...new Set(handles)].sort()) {
    await sql`SELECT pg_advisory_xact_lock(hashtext(${`ledgerfeed:handle:${handle}`}))`.execute(trx);
  }
}

/** Refuses a handle reserved for an account other than `accountId` (null: a new account). */
async function refuseReserved(
  trx: Transaction<Database>,
  handle: string,
  accountId: string | null,
): Promise<void> {
  let query = trx
    .selectFrom('released_handles')
    .select(['handle', 'reserved_until'])
    .where('handle', '=', handle)
    .where('reserved_until', '>', sql<Date>`now()`);
  if (accountId !== null) query = query.where('account_id', '<>', accountId);
  const reserved = await query.executeTakeFirst();
  if (reserved) throw handleReserved({ handle: reserved.handle, reservedUntil: reserved.reserved_until });
}
