import type { Db } from './db.js';

/** A user account with its wallet. */
export interface UserWalletRow {
  id: string;
  handle: string;
  wallet_address: string;
  /** The account has a native-token ledger account (created on its first native movement). */
  has_native: boolean;
}

/** Every account that has a wallet address. */
export async function usersWithWallets(db: Db): Promise<UserWalletRow[]> {
  const rows = await db
    .selectFrom('accounts')
    .select((eb) => [
      'id',
      'handle',
      'wallet_address',
      eb
        .exists(
          eb
            .selectFrom('ledger_accounts as la')
            .select('la.id')
            .whereRef('la.account_id', '=', 'accounts.id')
            .where('la.currency', '=', 'native'),
        )
        .as('has_native'),
    ])
    .where('wallet_address', 'is not', null)
    .execute();
  return rows.flatMap(({ id, handle, wallet_address, has_native }) =>
    wallet_address ? [{ id, handle, wallet_address, has_native: Boolean(has_native) }] : [],
  );
}
