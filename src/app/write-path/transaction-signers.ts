import { accountIdOfWallet } from '../../adapters/postgres/custodial-wallets.repository.js';
import type { Db } from '../../adapters/postgres/db.js';
import type { Keystore, PlatformChain, Signer } from '../../adapters/solana/index.js';
import { requiredSignerKeys } from '../../adapters/solana/payment-signing.js';
import { walletSigner } from './payment-transaction.js';

/**
 * The signers a stored transaction requires, found from its own message: each required key is one
 * of the platform's (fee payer, creator fund, pool authority, ...) or a user's custodial wallet.
 * Re-signing an outbox row this way works for every kind of money move (a post paid by its user, a
 * creator-fund batch signed by the fund, a swap signed by a user and the pool) without the
 * settlement knowing which kind it holds.
 */
export async function requiredSigners(
  deps: { db: Db; keystore: Keystore },
  platform: PlatformChain,
  wire: Buffer,
): Promise<Signer[]> {
  const required = requiredSignerKeys(wire);
  const platformSigners = Object.values(platform.signers);
  return Promise.all(
    required.map(async (key) => {
      const own = platformSigners.find((signer) => signer.publicKey.equals(key));
      if (own) return own;
      const accountId = await accountIdOfWallet(deps.db, key.toBase58());
      if (!accountId)
        throw new Error(`no signer of ours for ${key.toBase58()}, required by a stored transaction`);
      return walletSigner(deps.db, deps.keystore, accountId);
    }),
  );
}
