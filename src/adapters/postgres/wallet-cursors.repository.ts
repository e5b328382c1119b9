import { sql } from 'kysely';
import type { Db } from './db.js';

/** Where the wallet follower's last round stopped for one token account. */
export interface WalletCursorRow {
  address: string;
  last_signature: string | null;
  last_slot: bigint | null;
}

/** The cursors of those of `addresses` that have one (an address never followed has none). */
export async function readWalletCursors(db: Db, addresses: readonly string[]): Promise<WalletCursorRow[]> {
  if (addresses.length === 0) return [];
  return db
    .selectFrom('wallet_cursors')
    .select(['address', 'last_signature', 'last_slot'])
    .where('address', '=', sql<string>`ANY(${addresses}::text[])`)
    .execute();
}

/**
 * Moves each address's cursor to the given signature and slot, in one statement. Never backwards:
 * a row whose stored slot is already later stays, so a slower concurrent follower finishing late
 * does not make the next round re-read what another already passed.
 */
export async function advanceWalletCursors(
  db: Db,
  cursors: ReadonlyArray<{ address: string; last_signature: string; last_slot: bigint }>,
): Promise<void> {
  if (cursors.length === 0) return;
  const updatedAt = new Date();
  await db
    .insertInto('wallet_cursors')
    .values(cursors.map((cursor) => ({ ...cursor, updated_at: updatedAt })))
    .onConflict((oc) =>
      oc
        .column('address')
        .doUpdateSet((eb) => ({
          last_signature: eb.ref('excluded.last_signature'),
          last_slot: eb.ref('excluded.last_slot'),
          updated_at: eb.ref('excluded.updated_at'),
        }))
        .where(
          sql<boolean>`wallet_cursors.last_slot IS NULL OR wallet_cursors.last_slot <= excluded.last_slot`,
        ),
    )
    .execute();
}
