import {
  buildTransfer,
  sendAndConfirm,
  signTransaction,
  USDC_DECIMALS,
  type PlatformChain,
} from '../../src/adapters/solana/index.js';
import type { App } from '../../src/app/app.js';
import { walletSigner } from '../../src/app/write-path/payment-transaction.js';
import type { Account } from '../../src/domain/accounts/account.js';

/**
 * Moves USDC out of a custodial wallet to the treasury without the ledger knowing, through a real
 * transaction on the localnet: the wallet's next payment fails on chain.
 */
export async function drainOnChain(
  app: App,
  platform: PlatformChain,
  account: Account,
  micro: bigint,
): Promise<string> {
  const signer = await walletSigner(app.db, app.keystore, account.id);
  const { blockhash, lastValidBlockHeight } = await app.rpc.getLatestBlockhash('confirmed');
  const drain = buildTransfer({
    feePayer: platform.signers.fee_payer.publicKey,
    recentBlockhash: blockhash,
    legs: [
      {
        mint: platform.usdcMint,
        decimals: USDC_DECIMALS,
        from: signer.publicKey,
        to: platform.signers.treasury.publicKey,
        amount: micro,
      },
    ],
  });
  const signed = signTransaction(drain, [platform.signers.fee_payer, signer]);
  await sendAndConfirm(app.rpc, { ...signed, lastValidBlockHeight }, { commitment: 'confirmed' });
  return signed.signature;
}
