import { setTimeout as sleep } from 'node:timers/promises';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import { ChainError, type RpcClient } from '../../adapters/solana/index.js';
import { clickhouseTime } from './event-shipper.js';

/** A landed transaction as the indexer keeps it. */
export interface FetchedTransaction {
  signature: string;
  slot: number;
  blockTime: Date;
  fee: number;
  /** null on success; the on-chain error JSON otherwise. */
  err: unknown;
  /** Net token movement per token account (post - pre), zero movements left out. */
  movements: TokenMovement[];
}

export interface TokenMovement {
  accountIndex: number;
  mint: string;
  owner: string;
  tokenAccount: string;
  amount: bigint;
}

export interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner?: string;
  uiTokenAmount: { amount: string };
}

interface RpcTransaction {
  slot: number;
  blockTime: number | null;
  meta: {
    err: unknown;
    fee: number;
    preTokenBalances?: TokenBalance[];
    postTokenBalances?: TokenBalance[];
  } | null;
  transaction: { message: { accountKeys: Array<string | { pubkey: string }> }; signatures: string[] };
}

/** getTransaction calls per JSON-RPC batch, and batches in flight at once. */
const CALLS_PER_BATCH = 100;
const BATCHES_IN_FLIGHT = 4;
/** Retryable failures (429, 5xx, timeouts) are retried this often, backing off from 250 ms. */
const ATTEMPTS = 5;

/**
 * getTransaction for many signatures: batched JSON-RPC (100 calls a request, 4 requests in flight),
 * with backoff on rate limits and server errors (honouring Retry-After). A signature the node does
 * not know at that commitment maps to null.
 */
export async function fetchTransactions(
  rpc: RpcClient,
  signatures: readonly string[],
  commitment: 'confirmed' | 'finalized',
): Promise<Map<string, FetchedTransaction | null>> {
  const result = new Map<string, FetchedTransaction | null>();
  const chunks: string[][] = [];
  for (let from = 0; from < signatures.length; from += CALLS_PER_BATCH) {
    chunks.push(signatures.slice(from, from + CALLS_PER_BATCH));
  }
  let next = 0;
  const lane = async () => {
    for (let k = next++; k < chunks.length; k = next++) {
      const chunk = chunks[k]!;
      const answers = await withBackoff(() =>
        rpc.batch<RpcTransaction | null>(
          chunk.map((signature) => ({
            method: 'getTransaction',
            params: [signature, { encoding: 'json', commitment, maxSupportedTransactionVersion: 0 }],
          })),
        ),
      );
      answers.forEach((answer, i) => {
        const signature = chunk[i]!;
        if ('error' in answer) throw answer.error;
        result.set(signature, answer.result ? toFetched(signature, answer.result) : null);
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(BATCHES_IN_FLIGHT, chunks.length) }, lane));
  return result;
}

/** Net change of `mint` per owner in a fetched transaction. */
export function tokenDeltas(tx: FetchedTransaction, mint: string): Map<string, bigint> {
  const deltas = new Map<string, bigint>();
  for (const movement of tx.movements) {
    if (movement.mint !== mint) continue;
    deltas.set(movement.owner, (deltas.get(movement.owner) ?? 0n) + movement.amount);
  }
  return deltas;
}

function toFetched(signature: string, tx: RpcTransaction): FetchedTransaction {
  return {
    signature,
    slot: tx.slot,
    blockTime: new Date((tx.blockTime ?? 0) * 1000),
    fee: tx.meta?.fee ?? 0,
    err: tx.meta?.err ?? null,
    movements: tokenMovements(tx.transaction.message.accountKeys, tx.meta),
  };
}

/**
 * Net token movement per token account (post - pre) of one transaction, zero movements left out;
 * `accountKeys` is its full key list (loaded addresses included), which the balances index into.
 */
export function tokenMovements(
  accountKeys: ReadonlyArray<string | { pubkey: string }>,
  meta: { preTokenBalances?: TokenBalance[]; postTokenBalances?: TokenBalance[] } | null,
): TokenMovement[] {
  const keys = accountKeys.map((key) => (typeof key === 'string' ? key : key.pubkey));
  const pre = new Map((meta?.preTokenBalances ?? []).map((b) => [b.accountIndex, b]));
  const post = new Map((meta?.postTokenBalances ?? []).map((b) => [b.accountIndex, b]));
  const movements: TokenMovement[] = [];
  for (const index of new Set([...pre.keys(), ...post.keys()])) {
    const before = pre.get(index);
    const after = post.get(index);
    const balance = after ?? before!;
    // A token account created in this transaction has no pre-balance (0); a closed one no post.
    const amount = BigInt(after?.uiTokenAmount.amount ?? '0') - BigInt(before?.uiTokenAmount.amount ?? '0');
    if (amount === 0n) continue;
    movements.push({
      accountIndex: index,
      mint: balance.mint,
      owner: balance.owner ?? '',
      tokenAccount: keys[index] ?? '',
      amount,
    });
  }
  return movements;
}

/** Runs `call`, retrying retryable chain failures with backoff (honouring Retry-After). */
export async function withBackoff<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof ChainError) || !error.retryable || attempt >= ATTEMPTS) throw error;
      const waitMs =
        error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : 250 * 2 ** (attempt - 1);
      await sleep(waitMs);
    }
  }
}

/**
 * The transactions and their token movements into ClickHouse (the reconciler's and the wallet
 * follower's record of what the chain did); rows collapse by key when written again.
 */
export async function recordTransactions(
  clickhouse: ClickHouse,
  transactions: FetchedTransaction[],
): Promise<void> {
  await clickhouse.insertRows(
    'chain_transactions',
    transactions.map((tx) => ({
      signature: tx.signature,
      slot: tx.slot,
      block_time: clickhouseTime(tx.blockTime),
      fee: tx.fee,
      status: tx.err === null ? 'success' : 'failed',
      error: tx.err === null ? '' : JSON.stringify(tx.err),
    })),
  );
  await clickhouse.insertRows(
    'token_movements',
    transactions.flatMap((tx) =>
      tx.movements.map((movement) => ({
        signature: tx.signature,
        account_index: movement.accountIndex,
        mint: movement.mint,
        owner: movement.owner,
        token_account: movement.tokenAccount,
        amount: movement.amount.toString(),
        block_time: clickhouseTime(tx.blockTime),
      })),
    ),
  );
}
