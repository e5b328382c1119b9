import type { Db } from './db.js';

export interface PlatformWalletRow {
  role: string;
  address: string;
  sealedSecret: string | null;
}

export async function listPlatformWallets(db: Db): Promise<PlatformWalletRow[]> {
  const rows = await db.selectFrom('platform_wallets').select(['role', 'address', 'sealed_secret']).execute();
  return rows.map((r) => ({ role: r.role, address: r.address, sealedSecret: r.sealed_secret }));
}

/**
 * Inserts the role unless it exists and returns the row that won: two processes bootstrapping at
 * once agree on one key per role.
 */
export async function insertPlatformWallet(db: Db, row: PlatformWalletRow): Promise<PlatformWalletRow> {
  await db
    .insertInto('platform_wallets')
    .values({ role: row.role, address: row.address, sealed_secret: row.sealedSecret })
    .onConflict((oc) => oc.column('role').doNothing())
    .execute();
  const stored = await db
    .selectFrom('platform_wallets')
    .select(['role', 'address', 'sealed_secret'])
    .where('role', '=', row.role)
    .executeTakeFirstOrThrow();
  return { role: stored.role, address: stored.address, sealedSecret: stored.sealed_secret };
}

/** The platform's key store as the Solana adapter asks for it (PlatformWalletStore). */
export function platformWalletStore(db: Db): {
  list(): Promise<PlatformWalletRow[]>;
  insert(row: PlatformWalletRow): Promise<PlatformWalletRow>;
} {
  return { list: () => listPlatformWallets(db), insert: (row) => insertPlatformWallet(db, row) };
}
