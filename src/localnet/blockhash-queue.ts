/** How many blocks a blockhash stays valid on a validator (MAX_PROCESSING_AGE). */
export const BLOCKHASH_VALIDITY_BLOCKS = 150;

export interface BlockhashEntry {
  blockhash: string;
  slot: number;
  /** The last block height at which a transaction using this blockhash can still land. */
  lastValidBlockHeight: number;
}

/**
 * One blockhash per slot, each valid for 150 blocks. litesvm itself accepts only its latest
 * blockhash, so its check is turned off and this queue decides, as a validator would.
 */
export class BlockhashQueue {
  private readonly entries = new Map<string, BlockhashEntry>();
  private newest: BlockhashEntry | undefined;

  constructor(initial: BlockhashEntry[] = []) {
    for (const entry of initial) this.push(entry);
  }

  push(entry: BlockhashEntry): void {
    this.entries.set(entry.blockhash, entry);
    this.newest = entry;
  }

  latest(): BlockhashEntry {
    if (!this.newest) throw new Error('no blockhash yet');
    return this.newest;
  }

  isValid(blockhash: string, blockHeight: number): boolean {
    const entry = this.entries.get(blockhash);
    return entry !== undefined && entry.lastValidBlockHeight >= blockHeight;
  }

  /** Forgets the blockhashes of blocks above `slot` (a fork dropped them). */
  dropAbove(slot: number): void {
    for (const [hash, entry] of this.entries) {
      if (entry.slot > slot) this.entries.delete(hash);
    }
    if (this.newest && this.newest.slot > slot) {
      this.newest = [...this.entries.values()].reduce<BlockhashEntry | undefined>(
        (newest, entry) => (newest && newest.slot >= entry.slot ? newest : entry),
        undefined,
      );
    }
  }

  /** Forgets blockhashes that can no longer land anything. */
  prune(blockHeight: number): void {
    for (const [hash, entry] of this.entries) {
      if (entry.lastValidBlockHeight < blockHeight) this.entries.delete(hash);
    }
  }

  toJSON(): BlockhashEntry[] {
    return [...this.entries.values()];
  }
}
