import type { Db } from './db.js';

/** A user account with its wallet. */
export interface UserWalletRow {
  id: string;
  handle: string;
  wallet_address: string;
}

/** Every account that has a wallet address. */
export async function usersWithWallets(db: Db): Promise<UserWalletRow[]> {
  const rows = await db
    .selectFrom('accounts')
    .select(['id', 'handle', 'wallet_address'])
    .where('wallet_address', 'is not', null)
    .execute();
  return rows.flatMap(({ id, handle, wallet_address }) =>
    wallet_address ? [{ id, handle, wallet_address }] : [],
  );
}
