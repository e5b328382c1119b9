import { ChainError, type BatchItem, type RpcClient } from '../../adapters/solana/index.js';
import { tokenMovements, withBackoff, type FetchedTransaction, type TokenBalance } from './chain-reader.js';

/** A block as the follower keeps it: its place in the chain and its transactions' token movements. */
export interface ChainBlock {
  slot: number;
  blockhash: string;
  parentSlot: number;
  previousBlockhash: string;
  blockTime: Date;
  transactions: BlockTransaction[];
}

/** A transaction of a block, with its account keys (the full list: loaded ones included). */
export interface BlockTransaction {
  signature: string;
  err: unknown;
  fee: number;
  /** Every token account a token balance names (pre or post), by its index into the key list. */
  tokenAccounts: string[];
  /** The keys that signed it. */
  signers: string[];
  raw: RawTransaction;
}

interface RawTransaction {
  meta: {
    err: unknown;
    fee: number;
    preTokenBalances?: TokenBalance[];
    postTokenBalances?: TokenBalance[];
  } | null;
  transaction: { signatures: string[]; accountKeys: Array<string | { pubkey: string; signer?: boolean }> };
}

interface RawBlock {
  blockhash: string;
  previousBlockhash: string;
  parentSlot: number;
  blockTime: number | null;
  transactions?: RawTransaction[];
}

/** Where the chain is, read in one request with the blocks after the cursor. */
export interface ChainTips {
  finalizedSlot: number;
  firstAvailableBlock: number;
  /** Slots after the cursor that hold a confirmed block, oldest first (at most `limit`). */
  blockSlots: number[];
}

/** Solana's "block not available for slot" (not produced or not confirmed yet: read it again). */
const BLOCK_NOT_AVAILABLE = -32004;
/** "Slot was skipped, or missing due to ledger jump to recent snapshot". */
const SLOT_SKIPPED = -32007;
/** "Block cleaned up, does not exist on node" (pruned). */
const BLOCK_CLEANED_UP = -32001;
/** getBlock calls per JSON-RPC batch: a block answer with every transaction can be large. */
const BLOCKS_PER_REQUEST = 10;

/**
 * The finalized slot, the first block the node still has and the confirmed blocks after `afterSlot`
 * (getBlocksWithLimit: slots it leaves out produced no block, which is what lets the follower accept a
 * gap in slots), in one batched request.
 */
export async function readTips(rpc: RpcClient, afterSlot: number, limit: number): Promise<ChainTips> {
  const [finalized, first, slots] = await withBackoff(() =>
    rpc.batch<unknown>([
      { method: 'getSlot', params: [{ commitment: 'finalized' }] },
      { method: 'getFirstAvailableBlock', params: [] },
      { method: 'getBlocksWithLimit', params: [afterSlot + 1, limit, { commitment: 'confirmed' }] },
    ]),
  );
  const value = <T>(answer: typeof finalized): T => {
    if (!answer) throw new Error('the RPC node answered a batch of 3 calls with fewer answers');
    if ('error' in answer) throw answer.error;
    return answer.result as T;
  };
  return {
    finalizedSlot: value<number>(finalized),
    firstAvailableBlock: value<number>(first),
    blockSlots: value<number[]>(slots),
  };
}

/** Why reading a run of blocks stopped before its end. */
export type ReadStop = 'unavailable' | 'skipped' | 'pruned';

/**
 * The blocks of `slots` at `confirmed`, in order, with only their signatures, token balances and
 * account keys (`transactionDetails: accounts`). Stops at the first block the node does not give
 * (-32004 not available yet, -32007 skipped after getBlocks listed it, -32001 pruned): the blocks
 * before it are returned with the reason, so the caller never steps over a block it did not read.
 */
export async function readBlocks(
  rpc: RpcClient,
  slots: readonly number[],
): Promise<{ blocks: ChainBlock[]; stoppedBy?: ReadStop }> {
  const blocks: ChainBlock[] = [];
  const config = {
    commitment: 'confirmed',
    encoding: 'json',
    transactionDetails: 'accounts',
    maxSupportedTransactionVersion: 0,
    rewards: false,
  };
  for await (const { slot, answer } of getBlocks(rpc, slots, config)) {
    if ('error' in answer) {
      const stoppedBy = readStop(answer.error);
      if (stoppedBy) return { blocks, stoppedBy };
      throw answer.error;
    }
    blocks.push(toBlock(slot, answer.result));
  }
  return { blocks };
}

/** getBlock for each of `slots` with one config, BLOCKS_PER_REQUEST calls a batch, in order. */
async function* getBlocks(
  rpc: RpcClient,
  slots: readonly number[],
  config: Record<string, unknown>,
): AsyncGenerator<{ slot: number; answer: BatchItem<RawBlock> }> {
  for (let from = 0; from < slots.length; from += BLOCKS_PER_REQUEST) {
    const chunk = slots.slice(from, from + BLOCKS_PER_REQUEST);
    const answers = await withBackoff(() =>
      rpc.batch<RawBlock>(chunk.map((slot) => ({ method: 'getBlock', params: [slot, config] }))),
    );
    for (const [i, answer] of answers.entries()) yield { slot: chunk[i]!, answer };
  }
}

/** A finalized slot the node no longer holds (pruned): too old to be dropped by a fork. */
export const PRUNED = Symbol('pruned');

/**
 * Each slot's block hash at `finalized`: null when the slot has no finalized block (skipped),
 * PRUNED when the node no longer has it; a slot not finalized yet is left out.
 */
export async function finalizedBlockhashes(
  rpc: RpcClient,
  slots: readonly number[],
): Promise<Map<number, string | null | typeof PRUNED>> {
  const hashes = new Map<number, string | null | typeof PRUNED>();
  const config = { commitment: 'finalized', transactionDetails: 'none', rewards: false };
  for await (const { slot, answer } of getBlocks(rpc, slots, config)) {
    if (!('error' in answer)) hashes.set(slot, answer.result.blockhash);
    else if (answer.error.rpcCode === SLOT_SKIPPED) hashes.set(slot, null);
    else if (answer.error.rpcCode === BLOCK_CLEANED_UP) hashes.set(slot, PRUNED);
    else if (answer.error.rpcCode !== BLOCK_NOT_AVAILABLE) throw answer.error;
  }
  return hashes;
}

/** The newest confirmed block (slot and hash): where a follower without a cursor starts. */
export async function newestConfirmedBlock(
  rpc: RpcClient,
): Promise<{ slot: number; blockhash: string; parentSlot: number; previousBlockhash: string }> {
  for (;;) {
    const slot = await withBackoff(() => rpc.call<number>('getSlot', [{ commitment: 'confirmed' }]));
    try {
      const block = await withBackoff(() =>
        rpc.call<RawBlock>('getBlock', [
          slot,
          { commitment: 'confirmed', transactionDetails: 'none', rewards: false },
        ]),
      );
      return {
        slot,
        blockhash: block.blockhash,
        parentSlot: block.parentSlot,
        previousBlockhash: block.previousBlockhash,
      };
    } catch (error) {
      // Between the two calls the slot may have been found skipped or not yet readable: ask again.
      if (!(error instanceof ChainError) || !readStop(error)) throw error;
    }
  }
}

function readStop(error: ChainError): ReadStop | undefined {
  if (error.rpcCode === BLOCK_NOT_AVAILABLE) return 'unavailable';
  if (error.rpcCode === SLOT_SKIPPED) return 'skipped';
  if (error.rpcCode === BLOCK_CLEANED_UP) return 'pruned';
  return undefined;
}

function toBlock(slot: number, raw: RawBlock): ChainBlock {
  return {
    slot,
    blockhash: raw.blockhash,
    parentSlot: raw.parentSlot,
    previousBlockhash: raw.previousBlockhash,
    blockTime: new Date((raw.blockTime ?? 0) * 1000),
    transactions: (raw.transactions ?? []).map((tx) => {
      const keys = tx.transaction.accountKeys;
      const key = (index: number) => {
        const entry = keys[index];
        return typeof entry === 'string' ? entry : (entry?.pubkey ?? '');
      };
      const indexes = new Set<number>();
      for (const balance of tx.meta?.preTokenBalances ?? []) indexes.add(balance.accountIndex);
      for (const balance of tx.meta?.postTokenBalances ?? []) indexes.add(balance.accountIndex);
      return {
        signature: tx.transaction.signatures[0]!,
        err: tx.meta?.err ?? null,
        fee: tx.meta?.fee ?? 0,
        tokenAccounts: [...indexes].map(key),
        // With transactionDetails `accounts` each key says whether it signed; a plain key list puts
        // the signers first, one per signature.
        signers: keys.flatMap((entry, index) =>
          typeof entry === 'string'
            ? index < tx.transaction.signatures.length
              ? [entry]
              : []
            : entry.signer
              ? [entry.pubkey]
              : [],
        ),
        raw: tx,
      };
    }),
  };
}

/**
 * A block's transaction as the indexer's other parts take it (chain_transactions and
 * token_movements rows, tokenDeltas).
 */
export function toFetched(block: ChainBlock, tx: BlockTransaction): FetchedTransaction {
  return {
    signature: tx.signature,
    slot: block.slot,
    blockTime: block.blockTime,
    fee: tx.fee,
    err: tx.err,
    movements: tokenMovements(tx.raw.transaction.accountKeys, tx.raw.meta),
  };
}
