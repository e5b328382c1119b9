import type { ValidatorError } from './svm-errors.js';

export interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner: string;
  programId: string;
  amount: string;
  decimals: number;
}

export interface StoredInnerInstruction {
  index: number;
  instructions: Array<{ programIdIndex: number; accounts: number[]; data: string; stackHeight: number }>;
}

/** Everything getTransaction and getSignaturesForAddress answer with, kept per landed transaction. */
export interface TransactionRecord {
  /** Order of landing across the whole chain; ties addresses' histories together. */
  seq: number;
  signature: string;
  slot: number;
  blockTime: number;
  /** Wire bytes, base64: the message is decoded from them on demand. */
  wire: string;
  version: 'legacy' | 0;
  /** Static keys followed by addresses loaded from lookup tables (writable, then readonly). */
  accountKeys: string[];
  loadedAddresses: { writable: string[]; readonly: string[] };
  err: ValidatorError | null;
  fee: number;
  preBalances: number[];
  postBalances: number[];
  preTokenBalances: TokenBalance[];
  postTokenBalances: TokenBalance[];
  innerInstructions: StoredInnerInstruction[];
  logMessages: string[];
  computeUnitsConsumed: number;
  memo: string | null;
}

/**
 * The localnet's own transaction history. litesvm remembers only its last 32 transactions (and
 * re-executes an evicted one when it is sent again), so dedupe, statuses, getTransaction and
 * per-address history all come from here.
 */
export class TransactionStore {
  private readonly bySignature = new Map<string, TransactionRecord>();
  /** address -> seq numbers of its transactions, ascending. */
  private readonly byAddress = new Map<string, number[]>();
  private readonly bySeq: TransactionRecord[] = [];

  get size(): number {
    return this.bySeq.length;
  }

  nextSeq(): number {
    return this.bySeq.length;
  }

  add(record: TransactionRecord): void {
    this.bySignature.set(record.signature, record);
    this.bySeq.push(record);
    for (const key of new Set(record.accountKeys)) {
      let list = this.byAddress.get(key);
      if (!list) this.byAddress.set(key, (list = []));
      list.push(record.seq);
    }
  }

  get(signature: string): TransactionRecord | undefined {
    return this.bySignature.get(signature);
  }

  /** The seq of the first record in a slot above `slot` (records land in slot order). */
  firstSeqAbove(slot: number): number {
    let lo = 0;
    let hi = this.bySeq.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.bySeq[mid]!.slot <= slot) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The transactions of one slot's block, in the order they landed. */
  inSlot(slot: number): TransactionRecord[] {
    return this.bySeq.slice(this.firstSeqAbove(slot - 1), this.firstSeqAbove(slot));
  }

  /** The newest record in a slot below `slot`. */
  lastBeforeSlot(slot: number): TransactionRecord | undefined {
    const seq = this.firstSeqAbove(slot - 1) - 1;
    return seq >= 0 ? this.bySeq[seq] : undefined;
  }

  /**
   * Forgets every record from `seq` on (a fork dropped their blocks): they are the newest, so the
   * tail of every list. Their signatures are unknown again and may land anew.
   */
  truncate(seq: number): void {
    while (this.bySeq.length > seq) {
      const record = this.bySeq.pop()!;
      this.bySignature.delete(record.signature);
      for (const key of new Set(record.accountKeys)) {
        const list = this.byAddress.get(key);
        if (list?.at(-1) === record.seq) list.pop();
        if (list?.length === 0) this.byAddress.delete(key);
      }
    }
  }

  /**
   * Newest first, like a validator: strictly older than `before`, stopping at (and excluding)
   * `until`. An unknown `before` yields nothing; an unknown `until` does not stop the walk.
   * Records `accept` refuses (not yet at the asked commitment: always the newest) are skipped and
   * do not count toward `limit`.
   */
  forAddress(
    address: string,
    options: {
      before?: string;
      until?: string;
      limit: number;
      accept?: (record: TransactionRecord) => boolean;
    },
  ): TransactionRecord[] {
    const list = this.byAddress.get(address) ?? [];
    let end = list.length;
    if (options.before !== undefined) {
      const before = this.bySignature.get(options.before);
      if (!before) return [];
      end = lowerBound(list, before.seq);
    }
    const untilSeq = options.until === undefined ? -1 : (this.bySignature.get(options.until)?.seq ?? -1);
    const out: TransactionRecord[] = [];
    for (let i = end - 1; i >= 0 && out.length < options.limit; i--) {
      const seq = list[i]!;
      if (seq <= untilSeq) break;
      const record = this.bySeq[seq]!;
      if (!options.accept || options.accept(record)) out.push(record);
    }
    return out;
  }
}

function lowerBound(sorted: number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
