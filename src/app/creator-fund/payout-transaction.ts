import type { PublicKey } from '@solana/web3.js';
import { associatedTokenAccount, type PlatformChain, type RpcClient } from '../../adapters/solana/index.js';
import { maxTransfersPerBatch } from '../../domain/payouts/payout-batches.js';
import { signTransfer, type SignedPayment } from '../write-path/payment-transaction.js';

/**
 * Longest memo a payout transaction carries (`ledgerfeed:fund:<epoch start ISO>:<batch>` is ~45
 * bytes). Batches are sized for this bound, so every batch fits whatever its memo's exact length.
 */
export const PAYOUT_MEMO_MAX_BYTES = 64;

/** Transfers per payout transaction: 16 with a 64-byte memo (see payoutTransactionBytes). */
export const TRANSFERS_PER_BATCH = maxTransfersPerBatch(PAYOUT_MEMO_MAX_BYTES);

export function payoutMemo(epochStart: Date, batchIndex: number): string {
  const memo = `ledgerfeed:fund:${epochStart.toISOString()}:${batchIndex}`;
  if (Buffer.byteLength(memo) > PAYOUT_MEMO_MAX_BYTES) throw new Error(`payout memo too long: ${memo}`);
  return memo;
}

/**
 * One payout batch: a transferChecked of native tokens from the creator fund's token account to
 * each recipient's, and a Memo naming the epoch and batch; the fee payer pays SOL, the fund signs.
 * Recipients' native token accounts exist (every custodial wallet gets both at creation). Signing
 * throws if the bytes exceed the 1232-byte limit, which the batch size rules out.
 */
export function signPayoutBatch(
  rpc: RpcClient,
  platform: PlatformChain,
  recipients: ReadonlyArray<{ owner: PublicKey; amount: bigint }>,
  memo: string,
): Promise<SignedPayment> {
  return signTransfer(rpc, platform, {
    legs: recipients.map(({ owner, amount }) => ({
      mint: platform.nativeMint,
      decimals: platform.nativeDecimals,
      from: platform.signers.creator_fund.publicKey,
      to: owner,
      amount,
    })),
    memo,
    signers: [platform.signers.creator_fund],
  });
}

/** The creator fund's native token balance on chain (base units; 0 when it has no account). */
export async function fundChainBalance(rpc: RpcClient, platform: PlatformChain): Promise<bigint> {
  const ata = associatedTokenAccount(platform.nativeMint, platform.signers.creator_fund.publicKey);
  try {
    const { value } = await rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
      ata.toBase58(),
      { commitment: 'confirmed' },
    ]);
    return BigInt(value.amount);
  } catch (error) {
    if (/could not find account|Invalid param/i.test((error as Error).message)) return 0n;
    throw error;
  }
}
