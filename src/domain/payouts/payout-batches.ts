/**
 * How many creator-fund transfers fit one Solana transaction, and the batches an epoch's payouts
 * are cut into. Pure arithmetic over the legacy wire format; src/app/creator-fund builds the real
 * transactions and a test checks the arithmetic against their bytes.
 */

/** Largest wire transaction a validator accepts (IPv6 MTU minus headers), in bytes. */
export const TRANSACTION_SIZE_LIMIT = 1232;

/**
 * Bytes of a legacy payout transaction with `transfers` transferChecked instructions from the
 * fund's token account and a Memo of `memoBytes`:
 *
 * - signatures: a 1-byte count and 64 bytes each for the fee payer and the fund (2);
 * - message header: 3 bytes;
 * - account keys: a compact count and 32 bytes per key: fee payer, fund owner, fund token account,
 *   the native mint, the Token program, the Memo program (6) and one token account per recipient;
 * - the recent blockhash: 32 bytes;
 * - instructions: a compact count; each transferChecked is program index 1 + account count 1 +
 *   4 account indexes + data length 1 + data 10 (tag, u64 amount, decimals) = 17 bytes; the Memo is
 *   program index 1 + account count 1 (none) + a compact data length + the text.
 *
 * `createdAccounts` of the recipients (those never paid before: a user wallet gets no token account
 * at sign-up) also get an idempotent create-associated-token-account instruction before the
 * transfers: their owner's key (32 bytes) each, the System and ATA programs once (64 bytes), and
 * per instruction program index 1 + account count 1 + 6 account indexes + data length 1 + data 1
 * (the idempotent tag) = 10 bytes.
 *
 * Compact lengths take 1 byte below 128 and 2 up to 16,383; every count here stays far below.
 */
export function payoutTransactionBytes(transfers: number, memoBytes: number, createdAccounts = 0): number {
  if (createdAccounts > transfers) throw new RangeError('more accounts created than recipients');
  const keys = 6 + transfers + (createdAccounts > 0 ? 2 : 0) + createdAccounts;
  const instructions = createdAccounts + transfers + 1;
  return (
    1 +
    2 * 64 +
    3 +
    compactLength(keys) +
    32 * keys +
    32 +
    compactLength(instructions) +
    10 * createdAccounts +
    17 * transfers +
    (1 + 1 + compactLength(memoBytes) + memoBytes)
  );
}

/**
 * The most transfers whose payout transaction (with that memo) fits the size limit; with
 * `createEvery`, when every recipient's token account is created in the same transaction.
 */
export function maxTransfersPerBatch(
  memoBytes: number,
  limit = TRANSACTION_SIZE_LIMIT,
  createEvery = false,
): number {
  const bytes = (n: number) => payoutTransactionBytes(n, memoBytes, createEvery ? n : 0);
  let n = 0;
  while (bytes(n + 1) <= limit) n++;
  if (n === 0)
    throw new RangeError(`not even one transfer fits ${limit} bytes with a ${memoBytes}-byte memo`);
  return n;
}

/**
 * Cuts the payouts (in the given order) into consecutive batches of at most `perBatch`, all full
 * but the last: fewest transactions, and a payout's batch follows from its position alone.
 */
export function cutIntoBatches<T>(payouts: readonly T[], perBatch: number): T[][] {
  if (!Number.isInteger(perBatch) || perBatch < 1) throw new RangeError(`perBatch must be >= 1: ${perBatch}`);
  const batches: T[][] = [];
  for (let k = 0; k < payouts.length; k += perBatch) batches.push(payouts.slice(k, k + perBatch));
  return batches;
}

function compactLength(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : 3;
}
