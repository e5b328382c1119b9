import { PublicKey } from '@solana/web3.js';
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

/**
 * Transfers per payout transaction that also creates every recipient's native token account (first
 * payment to those wallets): 8 with a 64-byte memo.
 */
export const CREATING_TRANSFERS_PER_BATCH = maxTransfersPerBatch(PAYOUT_MEMO_MAX_BYTES, undefined, true);

/** Addresses per getMultipleAccounts call (the RPC's maximum). */
const ACCOUNTS_PER_CALL = 100;

export interface PayoutRecipient {
  owner: PublicKey;
  amount: bigint;
  /** Create the owner's native token account first (it has none yet; idempotent either way). */
  createAccount?: boolean;
}

export function payoutMemo(epochStart: Date, batchIndex: number): string {
  const memo = `ledgerfeed:fund:${epochStart.toISOString()}:${batchIndex}`;
  if (Buffer.byteLength(memo) > PAYOUT_MEMO_MAX_BYTES) throw new Error(`payout memo too long: ${memo}`);
  return memo;
}

/**
 * One payout batch: a transferChecked of native tokens from the creator fund's token account to
 * each recipient's, and a Memo naming the epoch and batch; the fee payer pays SOL (and the rent of
 * the token accounts it creates for `createAccount` recipients), the fund signs. Signing throws if
 * the bytes exceed the 1232-byte limit, which the batch sizes rule out.
 */
export function signPayoutBatch(
  rpc: RpcClient,
  platform: PlatformChain,
  recipients: readonly PayoutRecipient[],
  memo: string,
): Promise<SignedPayment> {
  return signTransfer(rpc, platform, {
    legs: recipients.map(({ owner, amount, createAccount }) => ({
      mint: platform.nativeMint,
      decimals: platform.nativeDecimals,
      from: platform.signers.creator_fund.publicKey,
      to: owner,
      amount,
      createRecipientAta: createAccount ?? false,
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

/**
 * The owners (base58) among `owners` whose native token account does not exist on chain yet:
 * their payout must create it. A custodial wallet's token account is never closed (only its
 * owner, our key, could), so "exists" never goes stale; "missing" may (a deposit created it since):
 * the create is idempotent, so that costs only bytes.
 */
export async function ownersWithoutNativeAccount(
  rpc: RpcClient,
  platform: PlatformChain,
  owners: readonly string[],
): Promise<Set<string>> {
  const missing = new Set<string>();
  for (let from = 0; from < owners.length; from += ACCOUNTS_PER_CALL) {
    const chunk = owners.slice(from, from + ACCOUNTS_PER_CALL);
    const { value } = await rpc.call<{ value: Array<unknown> }>('getMultipleAccounts', [
      chunk.map((owner) => associatedTokenAccount(platform.nativeMint, new PublicKey(owner)).toBase58()),
      { encoding: 'base64', commitment: 'confirmed', dataSlice: { offset: 0, length: 0 } },
    ]);
    chunk.forEach((owner, i) => {
      if (!value[i]) missing.add(owner);
    });
  }
  return missing;
}
