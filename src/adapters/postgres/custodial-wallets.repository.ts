import type { Db } from './db.js';

/** Account `accountId`'s custodial wallet as kept: address and sealed seed (null without one). Throws when no such account. */
export async function sealedUserWallet(
  db: Db,
  accountId: string,
): Promise<{ address: string | null; sealedSecret: string | null }> {
  const row = await db
    .selectFrom('accounts')
    .select(['wallet_address', 'wallet_secret'])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
  return { address: row.wallet_address, sealedSecret: row.wallet_secret };
}

/** The account whose custodial wallet is `address`, if any. */
export async function accountIdOfWallet(db: Db, address: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('accounts')
    .select('id')
    .where('wallet_address', '=', address)
    .executeTakeFirst();
  return row?.id;
}
