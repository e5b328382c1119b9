import { PublicKey } from '@solana/web3.js';
import { USDC_DECIMALS, type PlatformChain } from './bootstrap.js';
import { sendAndConfirm } from './confirm.js';
import type { RpcClient } from './rpc-client.js';
import { signTransaction } from './sign.js';
import { buildMintTo } from './transaction-builder.js';

export class FaucetRefusedError extends Error {
  override name = 'FaucetRefusedError';
}

/**
 * Dev faucet: mints USDC (micro-USD = base units) into the owner's associated token account,
 * creating it. Only where our USDC is a mint we control on a private cluster (mintsTestTokens).
 */
export async function fundUsdc(
  rpc: RpcClient,
  platform: PlatformChain,
  owner: string,
  amountMicro: bigint,
): Promise<{ signature: string }> {
  return mintOnLocalnet(rpc, platform, owner, amountMicro, 'usdc');
}

/**
 * Dev faucet for the native token: mints `units` base units into the owner's native token
 * account (creating it). Only where we hold the native mint's authority (mintsTestTokens). The caller credits the ledger's native
 * account as a deposit keyed by the signature, as for USDC, so ledger = chain for native too.
 */
export async function fundNative(
  rpc: RpcClient,
  platform: PlatformChain,
  owner: string,
  units: bigint,
): Promise<{ signature: string }> {
  return mintOnLocalnet(rpc, platform, owner, units, 'native');
}

async function mintOnLocalnet(
  rpc: RpcClient,
  platform: PlatformChain,
  owner: string,
  amountMicro: bigint,
  token: 'usdc' | 'native',
): Promise<{ signature: string }> {
  let to: PublicKey;
  try {
    to = new PublicKey(owner);
  } catch {
    throw new FaucetRefusedError(`${owner} is not a Solana address`);
  }
  if (amountMicro <= 0n) throw new FaucetRefusedError('the amount must be above zero');
  if (!platform.mintsTestTokens) {
    throw new FaucetRefusedError(
      `The faucet mints only where the platform holds both mints' authorities on a private cluster (the embedded localnet or a validator of ours), not on ${platform.cluster}.`,
    );
  }
  const { blockhash, lastValidBlockHeight } = await rpc.getLatestBlockhash('confirmed');
  const feePayer = platform.signers.fee_payer;
  const authority =
    token === 'usdc' ? platform.signers.usdc_mint_authority : platform.signers.native_mint_authority;
  const tx = buildMintTo({
    feePayer: feePayer.publicKey,
    recentBlockhash: blockhash,
    mint: token === 'usdc' ? platform.usdcMint : platform.nativeMint,
    decimals: token === 'usdc' ? USDC_DECIMALS : platform.nativeDecimals,
    authority: authority.publicKey,
    to,
    amount: amountMicro,
  });
  const signed = signTransaction(tx, [feePayer, authority]);
  await sendAndConfirm(rpc, { ...signed, lastValidBlockHeight }, { commitment: 'confirmed' });
  return { signature: signed.signature };
}
