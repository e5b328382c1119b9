import { Transaction, type PublicKey } from '@solana/web3.js';
import { USDC_DECIMALS, type PlatformChain } from './bootstrap.js';
import { signerFromSeed, type Signer } from './keypair.js';
import type { Keystore } from './keystore.js';
import type { RpcClient } from './rpc-client.js';
import { signTransaction } from './sign.js';
import { buildTransfer, type TransferLeg } from './transaction-builder.js';

/** A user's custodial wallet as kept (Postgres's `accounts`): its address and its sealed seed. */
export interface SealedUserWallet {
  address: string | null;
  sealedSecret: string | null;
}

/**
 * Unsealed signers of recently active wallets, per keystore. Unsealing costs a query, an AES-GCM
 * open and building a key object (~1 ms of CPU, most of a paid post's): active accounts pay it
 * once. A wallet's key never changes, so an entry never goes stale; the map is bounded.
 */
const signerCaches = new WeakMap<Keystore, Map<string, Signer>>();
const MAX_CACHED_SIGNERS = 10_000;

/**
 * The signer of account `accountId`'s custodial wallet, from the cache or unsealed from what
 * `sealed` reads (only on a miss: the store belongs to another adapter).
 */
export async function cachedWalletSigner(
  keystore: Keystore,
  accountId: string,
  sealed: () => Promise<SealedUserWallet>,
): Promise<Signer> {
  let cache = signerCaches.get(keystore);
  if (!cache) signerCaches.set(keystore, (cache = new Map<string, Signer>()));
  const cached = cache.get(accountId);
  if (cached) return cached;
  const wallet = await sealed();
  if (!wallet.address || !wallet.sealedSecret)
    throw new Error(`account ${accountId} has no custodial wallet`);
  const signer = signerFromSeed(keystore.decrypt(wallet.sealedSecret, wallet.address));
  // Oldest first out: a Map iterates in insertion order.
  if (cache.size >= MAX_CACHED_SIGNERS) cache.delete(cache.keys().next().value!);
  cache.set(accountId, signer);
  return signer;
}

/**
 * A recent blockhash, shared for up to a second per RPC client: every payment signed in that
 * second uses it. A blockhash lives 150 slots (~60 s), so this costs at most a second of it and
 * saves an RPC round trip per payment.
 */
const blockhashCaches = new WeakMap<
  RpcClient,
  { at: number; value: Promise<{ blockhash: string; lastValidBlockHeight: number }> }
>();
const BLOCKHASH_REUSE_MS = 1_000;

function recentBlockhash(rpc: RpcClient): Promise<{ blockhash: string; lastValidBlockHeight: number }> {
  const cached = blockhashCaches.get(rpc);
  if (cached && Date.now() - cached.at < BLOCKHASH_REUSE_MS) return cached.value;
  const value = rpc.getLatestBlockhash('confirmed');
  blockhashCaches.set(rpc, { at: Date.now(), value });
  value.catch(() => blockhashCaches.delete(rpc)); // a failed read is not reused
  return value;
}

export interface UsdcPayment {
  from: Signer;
  /**
   * Owner wallets and amounts (micro-USD = USDC base units), one transferChecked each.
   * `createAccount`: the owner may have no USDC account yet (a user wallet gets none at sign-up;
   * its first incoming payment creates it, idempotently, rent paid by the fee payer). Not needed to
   * pay the platform's wallets (the bootstrap made their accounts) nor a post's author (paying for
   * the post took USDC, so the author's account exists, and token accounts are never closed).
   */
  to: Array<{ owner: PublicKey; amountMicro: bigint; createAccount?: boolean }>;
  memo: string;
}

export interface SignedPayment {
  wire: Buffer;
  signature: string;
  blockhash: string;
  lastValidBlockHeight: number;
}

/**
 * One atomic USDC transaction: every leg from the payer's wallet, a Memo, the platform fee payer
 * paying SOL. Signed here; sent later by the payments worker from the outbox.
 */
export function signUsdcPayment(
  rpc: RpcClient,
  platform: PlatformChain,
  payment: UsdcPayment,
): Promise<SignedPayment> {
  return signTransfer(rpc, platform, {
    legs: payment.to.map(({ owner, amountMicro, createAccount }) => ({
      mint: platform.usdcMint,
      decimals: USDC_DECIMALS,
      from: payment.from.publicKey,
      to: owner,
      amount: amountMicro,
      createRecipientAta: createAccount ?? false,
    })),
    memo: payment.memo,
    signers: [payment.from],
  });
}

/**
 * Any platform money move's transaction (a USDC payment, a swap, a creator-fund batch): the legs
 * in order, a Memo, the platform fee payer paying SOL and signing with `signers` (every wallet a
 * leg takes tokens from), under a recent blockhash.
 */
export async function signTransfer(
  rpc: RpcClient,
  platform: PlatformChain,
  transfer: { legs: TransferLeg[]; memo: string; signers: Signer[] },
): Promise<SignedPayment> {
  const { blockhash, lastValidBlockHeight } = await recentBlockhash(rpc);
  const tx = buildTransfer({
    feePayer: platform.signers.fee_payer.publicKey,
    recentBlockhash: blockhash,
    legs: transfer.legs,
    memo: transfer.memo,
    computeUnitPriceMicroLamports: platform.priorityFeeMicroLamports,
  });
  const signed = signTransaction(tx, [platform.signers.fee_payer, ...transfer.signers]);
  return { ...signed, blockhash, lastValidBlockHeight };
}

/**
 * The same message under a fresh blockhash: what the worker sends when the first blockhash
 * expired with nothing landed. The signature (and so `swap_tx`) changes.
 */
export async function resignPayment(rpc: RpcClient, wire: Buffer, signers: Signer[]): Promise<SignedPayment> {
  const { blockhash, lastValidBlockHeight } = await rpc.getLatestBlockhash('confirmed');
  const original = Transaction.from(wire);
  const tx = new Transaction({ feePayer: original.feePayer!, recentBlockhash: blockhash }).add(
    ...original.instructions,
  );
  const signed = signTransaction(tx, signers);
  return { ...signed, blockhash, lastValidBlockHeight };
}

/** The keys a stored transaction requires to be signed again, found from its own message. */
export function requiredSignerKeys(wire: Buffer): PublicKey[] {
  const message = Transaction.from(wire).compileMessage();
  return message.accountKeys.slice(0, message.header.numRequiredSignatures);
}
