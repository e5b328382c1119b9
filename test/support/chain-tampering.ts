import {
  buildTransfer,
  sendAndConfirm,
  signTransaction,
  USDC_DECIMALS,
  type PlatformChain,
} from '../../src/adapters/solana/index.js';
import type { App } from '../../src/app/wiring.js';
import type { PublicKey } from '@solana/web3.js';
import { signUsdcPayment, walletSigner } from '../../src/app/write-path/payment-transaction.js';
import type { Account } from '../../src/domain/accounts/account.js';
import { commitPost } from '../../src/app/write-path/create-post.js';
import { settlePayment } from '../../src/app/write-path/settle-payment.js';

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

/**
 * Replaces a committed payment's signed transaction with another one (as a bug in the signing code
 * would): the ledger still says what it said; the chain will do what the new bytes say.
 */
export async function replaceSignedPayment(
  app: App,
  platform: PlatformChain,
  chainTransactionId: string,
  payer: Account,
  to: Array<{ owner: PublicKey; amountMicro: bigint }>,
): Promise<void> {
  const signer = await walletSigner(app.db, app.keystore, payer.id);
  const forged = await signUsdcPayment(app.rpc, platform, { from: signer, to, memo: 'tampered' });
  await app.db
    .updateTable('chain_transactions')
    .set({
      wire: forged.wire,
      signature: forged.signature,
      blockhash: forged.blockhash,
      last_valid_block_height: BigInt(forged.lastValidBlockHeight),
    })
    .where('id', '=', chainTransactionId)
    .execute();
}

/**
 * A paid post whose payment says $1 in the ledger and moves $0.60 to the treasury on chain (a
 * signing bug, say), settled at confirmed: the reconciler judges it `amount_mismatch`.
 */
export async function shortChangedPost(
  app: App,
  platform: PlatformChain,
  payer: Account,
): Promise<{ chainTransactionId: string; signature: string }> {
  const { chainTransactionId } = await commitPost(app, payer.id, { type: 'post', content: 'short-changed' });
  await replaceSignedPayment(app, platform, chainTransactionId, payer, [
    { owner: platform.signers.treasury.publicKey, amountMicro: 600_000n },
  ]);
  const settled = await settlePayment(app, chainTransactionId);
  if (settled !== 'confirmed') throw new Error(`the short-changed payment settled ${settled}, not confirmed`);
  const { signature } = await app.db
    .selectFrom('chain_transactions')
    .select('signature')
    .where('id', '=', chainTransactionId)
    .executeTakeFirstOrThrow();
  return { chainTransactionId, signature };
}
