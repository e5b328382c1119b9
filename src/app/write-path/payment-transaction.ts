import type { PublicKey } from '@solana/web3.js';
import { Transaction } from '@solana/web3.js';
import {
  buildTransfer,
  signerFromSeed,
  signTransaction,
  USDC_DECIMALS,
  type Keystore,
  type PlatformChain,
  type RpcClient,
  type Signer,
} from '../../adapters/solana/index.js';
import type { Transaction as DbTransaction } from 'kysely';
import type { Database } from '../../adapters/postgres/database.js';
import type { Db } from '../../adapters/postgres/db.js';

/** The signer of a user's custodial wallet, unsealed for one transaction. */
export async function walletSigner(db: Db, keystore: Keystore, accountId: string): Promise<Signer> {
  const row = await db
    .selectFrom('accounts')
    .select(['wallet_address', 'wallet_secret'])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
  if (!row.wallet_address || !row.wallet_secret)
    throw new Error(`account ${accountId} has no custodial wallet`);
  return signerFromSeed(keystore.decrypt(row.wallet_secret, row.wallet_address));
}

export interface UsdcPayment {
  from: Signer;
  /** Owner wallets and amounts (micro-USD = USDC base units), one transferChecked each. */
  to: Array<{ owner: PublicKey; amountMicro: bigint }>;
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
export async function signUsdcPayment(
  rpc: RpcClient,
  platform: PlatformChain,
  payment: UsdcPayment,
): Promise<SignedPayment> {
  const { blockhash, lastValidBlockHeight } = await rpc.getLatestBlockhash('confirmed');
  const tx = buildTransfer({
    feePayer: platform.signers.fee_payer.publicKey,
    recentBlockhash: blockhash,
    legs: payment.to.map(({ owner, amountMicro }) => ({
      mint: platform.usdcMint,
      decimals: USDC_DECIMALS,
      from: payment.from.publicKey,
      to: owner,
      amount: amountMicro,
    })),
    memo: payment.memo,
  });
  const signed = signTransaction(tx, [platform.signers.fee_payer, payment.from]);
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

/**
 * Puts a signed payment in the outbox, inside the caller's transaction (the one that also writes
 * the ledger movement and the domain row), and returns the outbox row id the worker settles.
 */
export async function insertOutboxPayment(
  trx: DbTransaction<Database>,
  movementId: string,
  payment: SignedPayment,
): Promise<string> {
  const row = await trx
    .insertInto('chain_transactions')
    .values({
      movement_id: movementId,
      signature: payment.signature,
      wire: payment.wire,
      blockhash: payment.blockhash,
      last_valid_block_height: BigInt(payment.lastValidBlockHeight),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}
