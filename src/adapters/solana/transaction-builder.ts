import {
  createAssociatedTokenAccountIdempotentInstruction,
  createMintToCheckedInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
  TOKEN_PROGRAM_ID,
} from '@solana/spl-token';
import { ComputeBudgetProgram, PublicKey, Transaction, TransactionInstruction } from '@solana/web3.js';

/**
 * Pure builders of unsigned legacy transactions on the classic SPL Token program. Owners are wallet
 * addresses; token accounts are always the owners' associated token accounts (ATAs), derived here,
 * so callers never pass a token account where an owner belongs. Owners must be on the ed25519 curve
 * (custodial keypairs): an ATA passed as an owner is rejected by the derivation.
 *
 * Amounts are bigint base units (USDC: 6 decimals, so micro-USD); `decimals` is checked on chain by
 * the *Checked instructions, which catches a leg built with the wrong mint.
 */

export const MEMO_PROGRAM_ID = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
/** Longest memo that still fits a legacy transaction with a few transfers (Memo v2 guidance). */
export const MAX_MEMO_BYTES = 566;
const U64_MAX = (1n << 64n) - 1n;

export interface TransferLeg {
  readonly mint: PublicKey;
  readonly decimals: number;
  /** Owner (wallet) paying; must sign. */
  readonly from: PublicKey;
  /** Owner (wallet) receiving. */
  readonly to: PublicKey;
  /** Base units, > 0. */
  readonly amount: bigint;
  /**
   * Create the recipient's ATA first if it is missing (idempotent; rent paid by the fee payer), in
   * the same atomic transaction. For recipients that may never have been paid (user wallets get no
   * token accounts at sign-up). Measured on the localnet for a one-leg USDC transfer: +106 bytes
   * (the owner, the System and ATA programs as keys, the instruction), and 16,917 compute units
   * instead of 392 when it creates the account, 7,829 when the account exists. The fee does not
   * change (it is per signature).
   */
  readonly createRecipientAta?: boolean;
}

export interface BuildTransferInput {
  /** Pays the SOL fee (and rent of any ATA created); must sign. */
  readonly feePayer: PublicKey;
  readonly recentBlockhash: string;
  /** Executed in order, atomically: one failing leg rolls back all. */
  readonly legs: readonly TransferLeg[];
  /** UTF-8, at most MAX_MEMO_BYTES; recorded in the transaction's logs for reconciliation. */
  readonly memo?: string;
  /** Create each recipient's ATA first if it is missing (idempotent; rent paid by feePayer). */
  readonly createRecipientAtas?: boolean;
  /**
   * Priority fee: a compute-unit price in micro-lamports, set by a ComputeBudget instruction
   * first (a congested cluster schedules paying transactions first). 0 or unset: none.
   */
  readonly computeUnitPriceMicroLamports?: number;
}

export function buildTransfer(input: BuildTransferInput): Transaction {
  if (input.legs.length === 0) throw new RangeError('a transfer needs at least one leg');
  input.legs.forEach((leg, index) => {
    checkAmount(leg.amount, `legs[${index}].amount`);
    checkDecimals(leg.decimals, `legs[${index}].decimals`);
  });
  const instructions: TransactionInstruction[] = [];
  if (input.computeUnitPriceMicroLamports)
    instructions.push(
      ComputeBudgetProgram.setComputeUnitPrice({ microLamports: input.computeUnitPriceMicroLamports }),
    );
  const seen = new Set<string>();
  for (const leg of input.legs) {
    if (input.createRecipientAtas || leg.createRecipientAta) {
      const ata = associatedTokenAccount(leg.mint, leg.to);
      if (seen.has(ata.toBase58())) continue;
      seen.add(ata.toBase58());
      instructions.push(
        createAssociatedTokenAccountIdempotentInstruction(input.feePayer, ata, leg.to, leg.mint),
      );
    }
  }
  for (const leg of input.legs) {
    instructions.push(
      createTransferCheckedInstruction(
        associatedTokenAccount(leg.mint, leg.from),
        leg.mint,
        associatedTokenAccount(leg.mint, leg.to),
        leg.from,
        leg.amount,
        leg.decimals,
        [],
        TOKEN_PROGRAM_ID,
      ),
    );
  }
  if (input.memo !== undefined) instructions.push(memoInstruction(input.memo));
  return transaction(input.feePayer, input.recentBlockhash, instructions);
}

export interface BuildCreateAtasInput {
  readonly feePayer: PublicKey;
  readonly recentBlockhash: string;
  readonly owner: PublicKey;
  readonly mints: readonly PublicKey[];
}

/** Creates `owner`'s ATA for each mint; already existing ones are left alone (idempotent). */
export function buildCreateAtas(input: BuildCreateAtasInput): Transaction {
  if (input.mints.length === 0) throw new RangeError('buildCreateAtas needs at least one mint');
  const seen = new Set<string>();
  const instructions: TransactionInstruction[] = [];
  for (const mint of input.mints) {
    if (seen.has(mint.toBase58())) continue;
    seen.add(mint.toBase58());
    const ata = associatedTokenAccount(mint, input.owner);
    instructions.push(
      createAssociatedTokenAccountIdempotentInstruction(input.feePayer, ata, input.owner, mint),
    );
  }
  return transaction(input.feePayer, input.recentBlockhash, instructions);
}

export interface BuildMintToInput {
  readonly feePayer: PublicKey;
  readonly recentBlockhash: string;
  readonly mint: PublicKey;
  readonly decimals: number;
  /** The mint authority; must sign. */
  readonly authority: PublicKey;
  /** Owner (wallet) receiving the new tokens into its ATA. */
  readonly to: PublicKey;
  /** Base units, > 0. */
  readonly amount: bigint;
  /** Create the recipient's ATA first if missing. @defaultValue true */
  readonly createAta?: boolean;
}

export function buildMintTo(input: BuildMintToInput): Transaction {
  checkAmount(input.amount, 'amount');
  checkDecimals(input.decimals, 'decimals');
  const ata = associatedTokenAccount(input.mint, input.to);
  const instructions: TransactionInstruction[] = [];
  if (input.createAta ?? true) {
    instructions.push(
      createAssociatedTokenAccountIdempotentInstruction(input.feePayer, ata, input.to, input.mint),
    );
  }
  instructions.push(
    createMintToCheckedInstruction(
      input.mint,
      ata,
      input.authority,
      input.amount,
      input.decimals,
      [],
      TOKEN_PROGRAM_ID,
    ),
  );
  return transaction(input.feePayer, input.recentBlockhash, instructions);
}

/**
 * Derivations kept, at most. Deriving an ATA is a PDA search (~0.3 ms, several per transfer) and the
 * same owners recur (treasury, fee pool, active users), so results are memoized; the bound (FIFO,
 * ~10 MB) keeps a flood of distinct owners from growing memory without limit.
 */
const ATA_CACHE_LIMIT = 20_000;
const ataCache = new Map<string, PublicKey>();

/** The owner's associated token account for `mint` under the classic SPL Token program. */
export function associatedTokenAccount(mint: PublicKey, owner: PublicKey): PublicKey {
  const key = `${mint.toBase58()}:${owner.toBase58()}`;
  const cached = ataCache.get(key);
  if (cached) return cached;
  const ata = getAssociatedTokenAddressSync(mint, owner, false, TOKEN_PROGRAM_ID);
  if (ataCache.size >= ATA_CACHE_LIMIT) {
    const oldest = ataCache.keys().next();
    if (!oldest.done) ataCache.delete(oldest.value);
  }
  ataCache.set(key, ata);
  return ata;
}

/** Memo v2 with no accounts: it only logs the text, so no signer is named or needed. */
function memoInstruction(memo: string): TransactionInstruction {
  const data = Buffer.from(memo, 'utf8');
  if (data.length === 0) throw new RangeError('memo must not be empty (omit it instead)');
  if (data.length > MAX_MEMO_BYTES) {
    throw new RangeError(`memo is ${data.length} bytes of UTF-8; at most ${MAX_MEMO_BYTES} fit`);
  }
  return new TransactionInstruction({ programId: MEMO_PROGRAM_ID, keys: [], data });
}

function transaction(
  feePayer: PublicKey,
  recentBlockhash: string,
  instructions: TransactionInstruction[],
): Transaction {
  const tx = new Transaction();
  tx.feePayer = feePayer;
  tx.recentBlockhash = recentBlockhash;
  tx.add(...instructions);
  return tx;
}

function checkAmount(amount: bigint, what: string): void {
  if (amount <= 0n) throw new RangeError(`${what} must be greater than 0 base units, got ${amount}`);
  if (amount > U64_MAX)
    throw new RangeError(`${what} exceeds the u64 maximum of a token amount, got ${amount}`);
}

function checkDecimals(decimals: number, what: string): void {
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > 255) {
    throw new RangeError(`${what} must be an integer from 0 to 255, got ${decimals}`);
  }
}
