import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { PublicKey } from '@solana/web3.js';
import type { Db } from '../../adapters/postgres/db.js';
import {
  addFollowedTokenAccounts,
  queuedWallets,
  resolveTokenAccounts,
  tokenAccountsAfter,
  type FollowedTokenAccount,
} from '../../adapters/postgres/block-follower.repository.js';
import { associatedTokenAccount, type PlatformChain } from '../../adapters/solana/index.js';

/** A token account of ours that a block touched: a user's, or one of the platform's roles. */
export type OurTokenAccount =
  | (FollowedTokenAccount & { kind: 'user' })
  | { kind: 'platform'; tokenAccount: string; owner: string; mint: string; role: string };

/** Rows read per statement while loading, and wallets derived per round. */
const LOAD_PAGE = 50_000;
const DERIVE_PER_ROUND = 2_000;
/** Derivations between yields to the event loop (~0.2 ms each). */
const DERIVE_BETWEEN_YIELDS = 100;

/**
 * The set of our token accounts, held as 30-bit hashes of their addresses in a typed array:
 * 1,000,000 users' two token accounts take 16 MB (a Set of the address strings took ~10x that, a
 * Set of the numbers ~80 MB of heap), and a look-up
 * per token balance of every block costs the same at any number of accounts. A hit is resolved
 * against Postgres (followed_token_accounts), which also throws out the rare false one (2,000,000
 * hashes in 2^30: one token balance in ~500 of accounts not ours costs a look-up that finds
 * nothing). The platform's few accounts are kept whole.
 */
export class FollowedAccounts {
  private readonly hashes = new HashSet();
  private readonly platform = new Map<string, OurTokenAccount & { kind: 'platform' }>();
  private lastSeq = 0n;
  private loaded = 0;

  constructor(
    private readonly db: Db,
    private readonly chain: PlatformChain,
  ) {
    const roles = ['treasury', 'creator_fund', 'fee_payer', 'pool_authority'] as const;
    for (const role of roles) {
      const owner = chain.signers[role].publicKey;
      for (const mint of [chain.usdcMint, chain.nativeMint]) {
        const tokenAccount = associatedTokenAccount(mint, owner).toBase58();
        this.platform.set(tokenAccount, {
          kind: 'platform',
          tokenAccount,
          owner: owner.toBase58(),
          mint: mint.toBase58(),
          role,
        });
      }
    }
  }

  /** Token accounts followed (users' and the platform's; the hashes may coincide, the rows do not). */
  get size(): number {
    return this.loaded + this.platform.size;
  }

  /** False only when `tokenAccount` is certainly not ours. */
  mayBeOurs(tokenAccount: string): boolean {
    return this.platform.has(tokenAccount) || this.hashes.has(addressHash(tokenAccount));
  }

  /** Ours among the candidate token accounts, resolved (one statement for the users'). */
  async resolve(candidates: Iterable<string>): Promise<Map<string, OurTokenAccount>> {
    const ours = new Map<string, OurTokenAccount>();
    const users: string[] = [];
    for (const tokenAccount of new Set(candidates)) {
      const platform = this.platform.get(tokenAccount);
      if (platform) ours.set(tokenAccount, platform);
      else users.push(tokenAccount);
    }
    for (const row of await resolveTokenAccounts(this.db, users))
      ours.set(row.tokenAccount, { ...row, kind: 'user' });
    return ours;
  }

  /**
   * Takes in what changed since the last call: derives the token accounts of wallets queued since
   * (at most DERIVE_PER_ROUND; true when more are waiting) and loads those another process derived.
   */
  async refresh(): Promise<{ more: boolean; derived: number }> {
    const queued = await queuedWallets(this.db, DERIVE_PER_ROUND);
    const derived: FollowedTokenAccount[] = [];
    for (const [index, { wallet, accountId }] of queued.entries()) {
      if (index % DERIVE_BETWEEN_YIELDS === DERIVE_BETWEEN_YIELDS - 1) await yieldToLoop();
      try {
        const owner = new PublicKey(wallet);
        for (const mint of [this.chain.usdcMint, this.chain.nativeMint]) {
          derived.push({
            tokenAccount: associatedTokenAccount(mint, owner).toBase58(),
            owner: wallet,
            mint: mint.toBase58(),
            accountId,
          });
        }
      } catch {
        // Not an address, or one off the curve (no key can sign for it: never a wallet of ours):
        // it has no associated token account to follow. Taken off the queue all the same, or it
        // would stop every round after it.
        continue;
      }
    }
    if (queued.length > 0) {
      await addFollowedTokenAccounts(
        this.db,
        derived,
        queued.map((q) => q.wallet),
      );
    }
    await this.loadNew();
    return { more: queued.length === DERIVE_PER_ROUND, derived: queued.length };
  }

  private async loadNew(): Promise<void> {
    for (;;) {
      const page = await tokenAccountsAfter(this.db, this.lastSeq, LOAD_PAGE);
      for (const row of page) this.hashes.add(addressHash(row.tokenAccount));
      this.loaded += page.length;
      if (page.length > 0) this.lastSeq = page[page.length - 1]!.seq;
      if (page.length < LOAD_PAGE) return;
      await yieldToLoop();
    }
  }
}

/** FNV-1a over the address's characters, cut to 30 bits so V8 keeps it as a small integer. */
function addressHash(address: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < address.length; i++) {
    hash ^= address.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash & 0x3fffffff;
}

/**
 * A set of 30-bit numbers in a Uint32Array (open addressing, linear probing, at most half full):
 * memory the garbage collector never scans, whatever the number of entries. A slot holds the
 * number + 1 (0 is empty).
 */
export class HashSet {
  private table = new Uint32Array(1 << 12);
  private count = 0;

  get size(): number {
    return this.count;
  }

  has(value: number): boolean {
    const mask = this.table.length - 1;
    for (let i = slotOf(value, mask); ; i = (i + 1) & mask) {
      const held = this.table[i]!;
      if (held === 0) return false;
      if (held === value + 1) return true;
    }
  }

  add(value: number): void {
    if ((this.count + 1) * 2 > this.table.length) this.grow();
    if (place(this.table, value)) this.count++;
  }

  private grow(): void {
    const old = this.table;
    this.table = new Uint32Array(old.length * 2);
    for (const held of old) if (held !== 0) place(this.table, held - 1);
  }
}

/** Puts `value` in `table`; false when it was there already. */
function place(table: Uint32Array, value: number): boolean {
  const mask = table.length - 1;
  for (let i = slotOf(value, mask); ; i = (i + 1) & mask) {
    const held = table[i]!;
    if (held === value + 1) return false;
    if (held === 0) {
      table[i] = value + 1;
      return true;
    }
  }
}

/** A slot for `value`, its bits mixed (Fibonacci hashing) so that neighbours spread. */
function slotOf(value: number, mask: number): number {
  return (Math.imul(value, 0x9e3779b1) >>> 0) & mask;
}
