import { randomBytes } from 'node:crypto';
import { PublicKey } from '@solana/web3.js';
import {
  buildTransfer,
  fundUsdc,
  sendAndConfirm,
  signerFromSeed,
  type Signer,
  signTransaction,
  USDC_DECIMALS,
  type PlatformChain,
  type RpcClient,
} from '../../src/adapters/solana/index.js';

/** A wallet outside the platform holding USDC (minted into it by the localnet's faucet). */
export async function outsideWallet(rpc: RpcClient, platform: PlatformChain, micro: bigint): Promise<Signer> {
  const outsider = signerFromSeed(randomBytes(32));
  await fundUsdc(rpc, platform, outsider.publicKey.toBase58(), micro);
  return outsider;
}

/**
 * A signed USDC transfer from `from` (outside the platform) into `to`'s token account, as an
 * exchange's withdrawal would be: the ledger knows nothing of it. Not sent: `send` sends it (again).
 */
export async function outsideTransfer(
  rpc: RpcClient,
  platform: PlatformChain,
  from: Signer,
  to: string,
  micro: bigint,
): Promise<{ signature: string; send: () => Promise<{ slot: number }> }> {
  const { blockhash, lastValidBlockHeight } = await rpc.getLatestBlockhash('confirmed');
  const tx = buildTransfer({
    // The platform's fee payer pays the fee (no SOL to find for the outsider); it is no mint authority.
    feePayer: platform.signers.fee_payer.publicKey,
    recentBlockhash: blockhash,
    // A new wallet has no token account yet: the transfer creates it, as an exchange withdrawal does.
    legs: [
      {
        mint: platform.usdcMint,
        decimals: USDC_DECIMALS,
        from: from.publicKey,
        to: new PublicKey(to),
        amount: micro,
        createRecipientAta: true,
      },
    ],
  });
  const signed = signTransaction(tx, [platform.signers.fee_payer, from]);
  return {
    signature: signed.signature,
    send: async () => {
      const { slot } = await sendAndConfirm(
        rpc,
        { ...signed, lastValidBlockHeight },
        { commitment: 'confirmed' },
      );
      return { slot };
    },
  };
}

/** Sends an outside deposit of `micro` into `to` and waits for it at confirmed. */
export async function outsideDeposit(
  rpc: RpcClient,
  platform: PlatformChain,
  from: Signer,
  to: string,
  micro: bigint,
): Promise<{ signature: string; slot: number }> {
  const transfer = await outsideTransfer(rpc, platform, from, to, micro);
  const { slot } = await transfer.send();
  return { signature: transfer.signature, slot };
}
