import { createHash, randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import type { TransactionStore } from './transaction-store.js';

/**
 * A run of slots whose blockhashes derive from one random seed: sha256(seed || slot). A chain
 * starts one when it opens (fresh or restarted) and when a fork replaces blocks, so a blockhash,
 * once issued, is never issued again (a restart or a fork gets a new seed), as the random
 * blockhashes before blocks existed guaranteed.
 */
export interface Segment {
  fromSlot: number;
  /** base64 of 32 random bytes. */
  seed: string;
  /** When the segment started (ms since the epoch); null for chains from before blocks existed. */
  startMs: number | null;
}

/** A block as getBlock describes it, without its transactions. */
export interface BlockHeader {
  slot: number;
  parentSlot: number;
  blockhash: string;
  previousBlockhash: string;
  blockHeight: number;
  blockTime: number | null;
}

/** A change to the block ledger, as the journal keeps it (replayed in order on load). */
export type BlockEvent = { segment: Segment } | { skip: number[] } | { prune: number };

export function newSegment(fromSlot: number): Segment {
  return { fromSlot, seed: randomBytes(32).toString('base64'), startMs: Date.now() };
}

/**
 * The localnet's blocks. One per slot the chain produced (every slot but the skipped ones), its
 * transactions those of the TransactionStore in that slot.
 *
 * Nothing is stored per block: a block is computed from its slot (blockhash from its segment's
 * seed; parent, height from the skipped slots; time from its transactions). That keeps a block
 * per slot free: an idle chain writes nothing per slot (the journal is written only when
 * transactions land, and fsync'd once per such batch, as before), and the rare events that shape
 * blocks (a new segment at open or fork, skipped slots, pruning) are journal lines of their own.
 *
 * A block without transactions takes the time of the newest block with transactions before it in
 * its segment (or the segment's start): computed the same way after a restart, so a block's answer
 * never changes, at the cost of an idle chain's empty blocks sharing a time.
 */
export class BlockLedger {
  /** Ascending by fromSlot. */
  private segments: Segment[] = [];
  private readonly skipped = new Set<number>();
  /** The skipped slots, ascending (they are only ever added above the current slot). */
  private readonly skippedSorted: number[] = [];
  /** Blocks below it are pruned: getBlock answers -32001. */
  firstAvailableSlot = 0;

  constructor(
    private readonly store: TransactionStore,
    genesisHash: string,
  ) {
    // Chains from before blocks existed: their old slots get a segment of their own.
    const seed = createHash('sha256').update(genesisHash).digest('base64');
    this.segments.push({ fromSlot: 0, seed, startMs: null });
  }

  apply(event: BlockEvent): void {
    if ('segment' in event) {
      const segment = event.segment;
      // A fork's segment replaces any that started at or after it.
      while (this.segments.length > 1 && this.segments.at(-1)!.fromSlot >= segment.fromSlot) {
        this.segments.pop();
      }
      if (this.segments.length === 1 && this.segments[0]!.fromSlot >= segment.fromSlot) this.segments = [];
      this.segments.push(segment);
    } else if ('skip' in event) {
      for (const slot of event.skip) {
        if (this.skipped.has(slot)) continue;
        this.skipped.add(slot);
        this.skippedSorted.push(slot);
      }
    } else {
      this.firstAvailableSlot = Math.max(this.firstAvailableSlot, event.prune);
    }
  }

  isSkipped(slot: number): boolean {
    return this.skipped.has(slot);
  }

  private segmentOf(slot: number): Segment {
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const segment = this.segments[i]!;
      if (segment.fromSlot <= slot) return segment;
    }
    return this.segments[0]!;
  }

  blockhashOf(slot: number): string {
    const slotBytes = Buffer.alloc(8);
    slotBytes.writeBigUInt64LE(BigInt(slot));
    const seed = Buffer.from(this.segmentOf(slot).seed, 'base64');
    return bs58.encode(createHash('sha256').update(seed).update(slotBytes).digest());
  }

  /** Blocks before this slot's (genesis is height 0; skipped slots add none). */
  heightOf(slot: number): number {
    let low = 0;
    let high = this.skippedSorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.skippedSorted[middle]! <= slot) low = middle + 1;
      else high = middle;
    }
    return slot - low;
  }

  /** The newest block at or below `slot` (slot 0, genesis, is never skipped); -1 below 0. */
  blockAtOrBelow(slot: number): number {
    let at = slot;
    while (at > 0 && this.skipped.has(at)) at--;
    return at;
  }

  /** The oldest block at or above `slot`. */
  blockAtOrAbove(slot: number): number {
    let at = Math.max(0, slot);
    while (this.skipped.has(at)) at++;
    return at;
  }

  /** The header of the block in `slot`, which must be one the chain produced. */
  header(slot: number): BlockHeader {
    const parentSlot = slot === 0 ? 0 : this.blockAtOrBelow(slot - 1);
    const blockhash = this.blockhashOf(slot);
    return {
      slot,
      parentSlot,
      blockhash,
      // Genesis has no parent block: its previous blockhash is its own.
      previousBlockhash: slot === 0 ? blockhash : this.blockhashOf(parentSlot),
      blockHeight: this.heightOf(slot),
      blockTime: this.blockTimeOf(slot),
    };
  }

  private blockTimeOf(slot: number): number | null {
    const own = this.store.inSlot(slot)[0];
    if (own) return own.blockTime;
    const segment = this.segmentOf(slot);
    const before = this.store.lastBeforeSlot(slot);
    if (before && before.slot >= segment.fromSlot) return before.blockTime;
    return segment.startMs === null ? null : Math.floor(segment.startMs / 1000);
  }
}
