import { PublicKey } from '@solana/web3.js';
import type { WalletProvisioner } from '../../domain/accounts/accounts.service.js';
import type { PlatformChain } from './bootstrap.js';
import { sendAndConfirm } from './confirm.js';
import { generateWallet } from './keypair.js';
import type { Keystore } from './keystore.js';
import type { RpcClient } from './rpc-client.js';
import { signTransaction } from './sign.js';
import { buildCreateAtas } from './transaction-builder.js';

/**
 * New custodial wallets: a fresh ed25519 key, sealed under the master key with the address as
 * associated data, and its USDC and native-token accounts created on chain by the fee payer (users
 * never hold SOL). The account row is written only after the chain confirms, so no account exists
 * without its token accounts.
 */
export function createWalletProvisioner(deps: {
  rpc: RpcClient;
  keystore: Keystore;
  platform: () => Promise<PlatformChain>;
}): WalletProvisioner {
  return {
    provision: async () => {
      const platform = await deps.platform();
      const wallet = generateWallet();
      const { blockhash, lastValidBlockHeight } = await deps.rpc.getLatestBlockhash('confirmed');
      const tx = buildCreateAtas({
        feePayer: platform.signers.fee_payer.publicKey,
        recentBlockhash: blockhash,
        owner: new PublicKey(wallet.address),
        mints: [platform.usdcMint, platform.nativeMint],
      });
      const signed = signTransaction(tx, [platform.signers.fee_payer]);
      await sendAndConfirm(deps.rpc, { ...signed, lastValidBlockHeight }, { commitment: 'confirmed' });
      return { address: wallet.address, sealedSecret: deps.keystore.encrypt(wallet.seed, wallet.address) };
    },
  };
}
