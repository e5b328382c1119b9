import type { WalletProvisioner } from '../../domain/accounts/accounts.service.js';
import { generateWallet } from './keypair.js';
import type { Keystore } from './keystore.js';

/**
 * New custodial wallets: a fresh ed25519 key, sealed under the master key with the address as
 * associated data. Nothing happens on chain: the wallet's token accounts are created by the
 * transaction that first pays it (the fee payer pays their rent then; see `createRecipientAta` in
 * transaction-builder.ts), or by whoever deposits into it from outside, as is usual on Solana.
 * Creating them at sign-up made every sign-up cost the fee payer two accounts' rent (~0.004 SOL),
 * so farming sign-ups drained the SOL that pays every fee; now an account nobody ever paid costs
 * the chain nothing.
 */
export function createWalletProvisioner(deps: { keystore: Keystore }): WalletProvisioner {
  return {
    provision: () => {
      const wallet = generateWallet();
      return Promise.resolve({
        address: wallet.address,
        sealedSecret: deps.keystore.encrypt(wallet.seed, wallet.address),
      });
    },
  };
}
