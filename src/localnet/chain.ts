import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  Keypair,
  PublicKey,
  SystemProgram,
  Transaction,
  TransactionInstruction,
  VersionedTransaction,
} from '@solana/web3.js';
import bs58 from 'bs58';
import { BlockLedger, newSegment, type BlockEvent, type BlockHeader } from './block-ledger.js';
import { BLOCKHASH_VALIDITY_BLOCKS, BlockhashQueue } from './blockhash-queue.js';
import {
  blockEventLine,
  ChainWriter,
  createChainState,
  forkLine,
  loadChainState,
  packAccounts,
  recordLine,
  setAccountLine,
  type ChainState,
} from './chain-persistence.js';
import { decodeMint, decodeTokenAccount, PROGRAM, TOKEN_PROGRAMS } from './programs.js';
import { RPC_CODES, RpcError, invalidParams } from './rpc-error.js';
import { svm, type LiteSvm, type SvmAccount, type TransactionMetadata } from './svm-binding.js';
import { describeValidatorError, toValidatorError, type ValidatorError } from './svm-errors.js';
import { TransactionStore, type TokenBalance, type TransactionRecord } from './transaction-store.js';

export type Commitment = 'processed' | 'confirmed' | 'finalized';

const COMMITMENT_RANK: Record<Commitment, number> = { processed: 0, confirmed: 1, finalized: 2 };

/** Whether a transaction at commitment `actual` counts for a read at `wanted`. */
export function reachesCommitment(actual: Commitment, wanted: Commitment): boolean {
  return COMMITMENT_RANK[actual] >= COMMITMENT_RANK[wanted];
}

/**
 * A landed transaction not finalized yet and the accounts it wrote as they were before it (null:
 * it created them): what an account read at `confirmed` or `finalized` puts back.
 */
interface UnsettledWrite {
  seq: number;
  slot: number;
  before: Map<string, SvmAccount | null>;
}

export interface ChainOptions {
  /** Folder for snapshots and history; undefined keeps the chain in memory only. */
  dir?: string;
  /** Slot length in milliseconds (a validator's is ~400). */
  slotMs: number;
  /**
   * Slots a transaction or block stays behind the newest before it is `confirmed` (and, with a
   * folder, not before it is on disk). @defaultValue 1
   */
  confirmationSlots?: number;
  /** Slots behind the newest at which a transaction or block is `finalized`. @defaultValue 32 */
  finalizationSlots?: number;
}

export interface AccountView {
  lamports: bigint;
  data: Uint8Array;
  owner: string;
  executable: boolean;
  rentEpoch: bigint;
}

export interface SignatureStatus {
  slot: number;
  confirmations: number | null;
  err: ValidatorError | null;
  confirmationStatus: Commitment;
}

export interface SimulationResult {
  err: ValidatorError | null;
  logs: string[];
  unitsConsumed: number;
}

/** Lamports per signature, as on mainnet; the only fee the localnet charges. */
export const LAMPORTS_PER_SIGNATURE = 5000;
/** A transaction is finalized once this many slots have passed over it (~13 s at 400 ms). */
const FINALIZATION_SLOTS = 32;
/** A transaction is confirmed once this many slots have passed over it (and it is on disk). */
const CONFIRMATION_SLOTS = 1;
const SLOTS_PER_EPOCH = 432_000;
/**
 * litesvm's full snapshot is written at most this often (with a batch of the journal), and on
 * close. Between snapshots, transactions reach the disk as journal lines carrying the accounts
 * they wrote, which a restart replays onto the last snapshot: a journal write costs what the
 * transactions weigh, a snapshot what the whole chain does.
 */
const SNAPSHOT_INTERVAL_MS = 60_000;
const FAUCET_LAMPORTS = 10n ** 17n;

/**
 * A single-node Solana chain over litesvm: slots advance on a clock, one blockhash per slot valid
 * for 150 blocks, duplicates deduplicated by signature, failed transactions recorded with their
 * error and fee, and the whole state kept under `dir` across restarts (and crashes: what was
 * reported `confirmed` is on disk, see commitmentOf).
 *
 * Events: `slot` (slot number) after each tick; `landed` (TransactionRecord) when one lands;
 * `durable` (the seq below which every transaction is on disk) after each completed write.
 */
export class LocalChain extends EventEmitter {
  private timer: NodeJS.Timeout | undefined;
  private slotStartedAt = Date.now();
  private readonly faucet: Keypair;
  /** Writes the folder; undefined for a chain kept in memory. */
  private writer: ChainWriter | undefined;
  /** Journal lines not written yet (or whose write failed), in landing order. */
  private unsaved: UnsavedLine[] = [];
  /** Transactions with a lower seq are on disk: only they can be `confirmed`. */
  private durableSeq: number;
  private saving: Promise<void> | undefined;
  private saveFailed = false;
  private snapshotFailed = false;
  private lastSnapshotAt = Date.now();
  private closing = false;
  /**
   * Landed transactions not finalized yet, in landing order, with the accounts they wrote as they
   * were before them: account reads at a commitment undo those that have not reached it. Their
   * commitment only grows along the list (older slots, lower seqs), so those not reaching a given
   * commitment are always its tail. Dropped once finalized. Empty after a restart: then reads at
   * every commitment show the newest state until new transactions land.
   */
  private unsettled: UnsettledWrite[] = [];
  readonly blocks: BlockLedger;
  /** Skipped slots still to come: the next tick passes over them. */
  private pendingSkips = 0;
  /** Test switch: every block answers -32004 to its first this many getBlock reads. */
  private unavailableReads = 0;
  /** getBlock reads answered -32004 so far, by blockhash (a fork's new block counts afresh). */
  private readonly refusedReads = new Map<string, number>();
  /**
   * The lowest seq a fork dropped from since the write in flight started: that write must not
   * make records durable that a fork has replaced by new ones with the same seqs.
   */
  private forkFloor = Infinity;

  private constructor(
    private readonly vm: LiteSvm,
    private state: ChainState,
    readonly store: TransactionStore,
    private readonly blockhashes: BlockhashQueue,
    private readonly options: ChainOptions,
  ) {
    super();
    this.setMaxListeners(0);
    this.durableSeq = store.size;
    this.faucet = Keypair.fromSecretKey(bs58.decode(state.faucetSecret));
    this.blocks = new BlockLedger(store, state.genesisHash);
  }

  get confirmationSlots(): number {
    return this.options.confirmationSlots ?? CONFIRMATION_SLOTS;
  }

  get finalizationSlots(): number {
    return this.options.finalizationSlots ?? FINALIZATION_SLOTS;
  }

  static open(options: ChainOptions): LocalChain {
    const loaded = options.dir ? loadChainState(options.dir) : undefined;
    const vm = loaded?.vm ?? new svm.LiteSvm();
    // Our queue decides which blockhashes are valid (litesvm keeps only its latest one).
    vm.setBlockhashCheck(false);
    vm.setSigverify(true);
    // Our store dedupes what landed. litesvm's own history would also remember a transaction
    // whose preflight failed and was rolled back (see submit), and refuse it ever after.
    vm.setTransactionHistory(0n);
    const store = new TransactionStore();
    for (const record of loaded?.records ?? []) store.add(record);
    const state = loaded?.state ?? genesis(vm);
    const chain = new LocalChain(vm, state, store, new BlockhashQueue(state.blockhashes), options);
    for (const event of loaded?.blockEvents ?? []) chain.blocks.apply(event);
    if (loaded) {
      // chain.json may be older than the journal's last skip; heights follow the skipped slots.
      while (chain.blocks.isSkipped(state.slot)) state.slot += 1;
      state.blockHeight = chain.blocks.heightOf(state.slot);
    }
    // A fresh seed for every slot from here: blockhashes issued before a crash are never issued
    // again. A fresh folder keeps its first in chain.json, written at once; a restart journals it.
    const segment = newSegment(loaded ? state.slot + 1 : 0);
    if (!loaded) state.segment = segment;
    chain.blocks.apply({ segment });
    if (!loaded) chain.advanceSlot(false);
    if (options.dir) {
      if (!loaded) createChainState(options.dir, vm, state);
      chain.writer = new ChainWriter(
        options.dir,
        loaded?.lines ?? 0,
        loaded?.bytes ?? 0,
        state.snapshotLines,
      );
      if (loaded) chain.journalBlockEvent({ segment }, segment.fromSlot);
    }
    chain.slotStartedAt = Date.now();
    chain.timer = setInterval(() => chain.tick(), options.slotMs);
    return chain;
  }

  get slot(): number {
    return this.state.slot;
  }

  get blockHeight(): number {
    return this.state.blockHeight;
  }

  get slotMs(): number {
    return this.options.slotMs;
  }

  get genesisHash(): string {
    return this.state.genesisHash;
  }

  get epoch(): number {
    return Math.floor(this.state.slot / SLOTS_PER_EPOCH);
  }

  get slotsPerEpoch(): number {
    return SLOTS_PER_EPOCH;
  }

  get transactionCount(): number {
    return this.store.size;
  }

  latestBlockhash() {
    const entry = this.blockhashes.latest();
    return { blockhash: entry.blockhash, lastValidBlockHeight: entry.lastValidBlockHeight };
  }

  isBlockhashValid(blockhash: string): boolean {
    return this.blockhashes.isValid(blockhash, this.state.blockHeight);
  }

  minimumBalanceForRentExemption(dataLength: number): bigint {
    return this.vm.minimumBalanceForRentExemption(BigInt(dataLength));
  }

  /**
   * An account as of `commitment`: the newest state at `processed`; at `confirmed` or `finalized`,
   * as the transactions that reached it left it (the state before the oldest one that has not and
   * wrote it), as a validator's bank at that commitment shows it.
   */
  getAccount(address: string, commitment: Commitment = 'processed'): AccountView | null {
    const key = addressBytes(address);
    const account =
      commitment === 'processed' ? this.vm.getAccount(key) : this.accountAt(address, key, commitment);
    return account ? accountView(account) : null;
  }

  private accountAt(address: string, key: Uint8Array, commitment: Commitment): SvmAccount | null {
    for (let i = this.firstShortOf(commitment); i < this.unsettled.length; i++) {
      const before = this.unsettled[i]!.before;
      if (before.has(address)) return before.get(address) ?? null;
    }
    return this.vm.getAccount(key);
  }

  /** Where the transactions short of `commitment` start in `unsettled` (they are its tail). */
  private firstShortOf(commitment: Commitment): number {
    let low = 0;
    let high = this.unsettled.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const entry = this.unsettled[middle]!;
      if (reachesCommitment(this.commitmentAt(entry.seq, entry.slot), commitment)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /**
   * Every account the transactions short of `commitment` wrote, as it was before the oldest of
   * them that wrote it: what a read at `commitment` shows instead of the newest state. One pass
   * over those transactions, for a read of many accounts (instead of one pass per account).
   */
  private priorStates(commitment: Commitment): Map<string, SvmAccount | null> {
    const prior = new Map<string, SvmAccount | null>();
    // Newest first, so the oldest transaction's prior state is the one kept.
    for (let i = this.unsettled.length - 1, end = this.firstShortOf(commitment); i >= end; i--) {
      for (const [address, account] of this.unsettled[i]!.before) prior.set(address, account);
    }
    return prior;
  }

  /** Places an account as is: the localnet's privileged path (bootstrap puts USDC at its mainnet address). */
  setAccount(address: string, account: Omit<AccountView, 'rentEpoch'>): void {
    const placed = new svm.Account(
      account.lamports,
      account.data,
      addressBytes(account.owner),
      account.executable,
      0n,
    );
    this.vm.setAccount(addressBytes(address), placed);
    // Placed by the operator, not by a transaction: at once the state at every commitment.
    for (const entry of this.unsettled) entry.before.delete(address);
    // Journaled in order with the transactions, which may depend on it (the bootstrap's USDC mint).
    if (this.writer) {
      const line = setAccountLine(packAccounts([{ key: addressBytes(address), account: placed }]));
      this.unsaved.push({ slot: this.state.slot, line });
    }
  }

  /**
   * Token accounts (of either token program) whose owner is `owner`, as of `commitment` (an account
   * created or handed to `owner` by a transaction short of it is left out; one taken away from
   * `owner` since is not found: the index is the newest state's).
   */
  tokenAccountsByOwner(
    owner: string,
    filter: { mint?: string; programId?: string },
    commitment: Commitment = 'processed',
  ) {
    const programs = filter.programId ? [filter.programId] : [...TOKEN_PROGRAMS];
    const prior = commitment === 'processed' ? undefined : this.priorStates(commitment);
    const found: Array<{ address: string; account: AccountView }> = [];
    for (const programId of programs) {
      if (!TOKEN_PROGRAMS.has(programId)) continue;
      for (const entry of this.vm.getProgramAccounts(addressBytes(programId))) {
        // Null: a transaction short of the commitment created it; undefined: none of them wrote it.
        const address = prior?.size ? bs58.encode(entry.address) : undefined;
        const undone = address === undefined ? undefined : prior?.get(address);
        const account = undone === undefined ? entry.account() : undone;
        if (!account) continue;
        const token = decodeTokenAccount(account.data());
        if (!token || token.owner !== owner || (filter.mint && token.mint !== filter.mint)) continue;
        found.push({
          address: address ?? bs58.encode(entry.address),
          account: {
            lamports: account.lamports(),
            data: account.data(),
            owner: programId,
            executable: false,
            rentEpoch: account.rentEpoch(),
          },
        });
      }
    }
    return found;
  }

  status(signature: string): SignatureStatus | null {
    const record = this.store.get(signature);
    if (!record) return null;
    const confirmationStatus = this.commitmentOf(record);
    const confirmations = {
      processed: 0,
      confirmed: this.state.slot - record.slot,
      finalized: null,
    }[confirmationStatus];
    return {
      slot: record.slot,
      confirmations,
      err: record.err,
      confirmationStatus,
    };
  }

  /**
   * `processed` once executed; `confirmed` when a completed write has put it on disk and a slot
   * has passed over it, so that a crash (even SIGKILL of the process) cannot take back a
   * transaction the chain called confirmed; `finalized` 32 slots later. A chain kept in memory
   * has no disk to wait for: nothing outlives its process anyway, so there a transaction is
   * `confirmed` one slot after it executes.
   */
  commitmentOf(record: TransactionRecord): Commitment {
    return this.commitmentAt(record.seq, record.slot);
  }

  private commitmentAt(seq: number, slot: number): Commitment {
    if (this.writer && seq >= this.durableSeq) return 'processed';
    const age = this.state.slot - slot;
    if (age >= this.finalizationSlots) return 'finalized';
    return age >= this.confirmationSlots ? 'confirmed' : 'processed';
  }

  /**
   * The newest block at `commitment` (-1: none yet): `confirmationSlots` or `finalizationSlots`
   * behind the newest, as a transaction's status is, and with a folder never a block whose
   * transactions (or the journal lines shaping it) are not on disk yet.
   */
  slotAt(commitment: Commitment): number {
    if (commitment === 'processed') return this.state.slot;
    let slot =
      this.state.slot - (commitment === 'confirmed' ? this.confirmationSlots : this.finalizationSlots);
    const firstUnsaved = this.unsaved[0];
    if (firstUnsaved) slot = Math.min(slot, firstUnsaved.slot - 1);
    return slot < 0 ? -1 : this.blocks.blockAtOrBelow(slot);
  }

  blockHeightAt(commitment: Commitment): number {
    const slot = this.slotAt(commitment);
    return slot < 0 ? 0 : this.blocks.heightOf(slot);
  }

  /**
   * The block in `slot` at `commitment` with its transactions, or the RPC error a validator
   * answers: -32001 pruned, -32004 not (yet) available, -32007 skipped.
   */
  block(slot: number, commitment: Commitment): { header: BlockHeader; transactions: TransactionRecord[] } {
    if (slot < this.blocks.firstAvailableSlot) {
      const first = this.blocks.blockAtOrAbove(this.blocks.firstAvailableSlot);
      throw new RpcError(
        RPC_CODES.blockCleanedUp,
        `Block ${slot} cleaned up, does not exist on node. First available block: ${first}`,
      );
    }
    if (slot > this.slotAt(commitment)) {
      throw new RpcError(RPC_CODES.blockNotAvailable, `Block not available for slot ${slot}`);
    }
    if (this.blocks.isSkipped(slot)) {
      throw new RpcError(
        RPC_CODES.slotSkipped,
        `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`,
      );
    }
    const header = this.blocks.header(slot);
    if (this.unavailableReads > 0) {
      const refused = this.refusedReads.get(header.blockhash) ?? 0;
      if (refused < this.unavailableReads) {
        this.refusedReads.set(header.blockhash, refused + 1);
        throw new RpcError(RPC_CODES.blockNotAvailable, `Block not available for slot ${slot}`);
      }
    }
    return { header, transactions: this.store.inSlot(slot) };
  }

  /** The blocks in [start, end] at `commitment` (end defaults to its newest), as getBlocks. */
  blockSlots(start: number, end: number | undefined, commitment: Commitment, limit: number): number[] {
    const last = Math.min(end ?? Infinity, this.slotAt(commitment));
    const slots: number[] = [];
    for (let slot = Math.max(start, this.blocks.firstAvailableSlot); slot <= last; slot++) {
      if (slots.length >= limit) break;
      if (!this.blocks.isSkipped(slot)) slots.push(slot);
    }
    return slots;
  }

  firstAvailableBlock(): number {
    return this.blocks.blockAtOrAbove(this.blocks.firstAvailableSlot);
  }

  /**
   * Test switches for blocks (localnet_blockFaults): `skipSlots` the next n slots produce no
   * block (the next tick passes over them); `unavailableReads` every block answers -32004 to its
   * first n getBlock reads (0: off).
   */
  setBlockFaults(faults: { skipSlots?: number; unavailableReads?: number }): void {
    if (faults.skipSlots !== undefined) this.pendingSkips += faults.skipSlots;
    if (faults.unavailableReads !== undefined) {
      this.unavailableReads = faults.unavailableReads;
      this.refusedReads.clear();
    }
  }

  /**
   * Prunes history: blocks below `slot` (which must be finalized) are gone; getBlock answers them
   * -32001 and getFirstAvailableBlock moves up. Transactions stay readable by signature.
   */
  pruneBelow(slot: number): void {
    if (slot > this.slotAt('finalized') + 1) throw invalidParams('only finalized blocks can be pruned');
    if (slot <= this.blocks.firstAvailableSlot) return;
    const event = { prune: slot };
    this.blocks.apply(event);
    this.journalBlockEvent(event, this.state.slot);
  }

  /**
   * A fork: the newest `depth` blocks (none of them finalized) are dropped with their transactions
   * (their accounts put back as they were before them, their signatures unknown again) and the
   * same slots are produced again on a new branch: new blockhashes, empty blocks, the first one's
   * parent the newest block kept. Returns that block's slot.
   */
  fork(depth: number): number {
    if (!Number.isInteger(depth) || depth < 1) throw invalidParams('depth must be a positive integer');
    let oldest = this.state.slot;
    for (let dropped = 1; dropped < depth; dropped++) oldest = this.blocks.blockAtOrBelow(oldest - 1);
    if (oldest <= Math.max(0, this.slotAt('finalized'))) {
      throw invalidParams(`a fork of ${depth} blocks would drop finalized blocks`);
    }
    const kept = this.blocks.blockAtOrBelow(oldest - 1);
    const dropFromSeq = this.store.firstSeqAbove(kept);
    let firstUndone = this.unsettled.length;
    while (firstUndone > 0 && this.unsettled[firstUndone - 1]!.slot > kept) firstUndone--;
    if (this.unsettled.length - firstUndone !== this.store.size - dropFromSeq) {
      // After a restart the accounts as they were before unsettled transactions are not known.
      throw invalidParams('a fork cannot drop transactions that landed before the chain restarted');
    }
    // Newest first, so the oldest transaction's prior state is the one put back.
    const restore = new Map<string, SvmAccount | null>();
    for (let i = this.unsettled.length - 1; i >= firstUndone; i--) {
      for (const [address, account] of this.unsettled[i]!.before) restore.set(address, account);
    }
    const writes: Array<{ key: Uint8Array; account: SvmAccount | null }> = [];
    for (const [address, account] of restore) {
      const key = addressBytes(address);
      this.vm.setAccount(
        key,
        account ?? new svm.Account(0n, new Uint8Array(0), new Uint8Array(32), false, 0n),
      );
      writes.push({ key, account });
    }
    this.unsettled.splice(firstUndone);
    this.store.truncate(dropFromSeq);
    this.durableSeq = Math.min(this.durableSeq, dropFromSeq);
    this.forkFloor = Math.min(this.forkFloor, dropFromSeq);

    const segment = newSegment(kept + 1);
    this.blocks.apply({ segment });
    this.blockhashes.dropAbove(kept);
    for (let slot = kept + 1; slot <= this.state.slot; slot++) {
      if (this.blocks.isSkipped(slot)) continue;
      this.blockhashes.push({
        blockhash: this.blocks.blockhashOf(slot),
        slot,
        lastValidBlockHeight: this.blocks.heightOf(slot) + BLOCKHASH_VALIDITY_BLOCKS,
      });
    }
    if (this.writer) {
      const line = forkLine({ slot: kept, dropFromSeq }, segment, packAccounts(writes));
      this.unsaved.push({ slot: kept + 1, line });
    }
    return kept;
  }

  /** Journals a change to the blocks; it holds back `confirmed` from `slot` on until written. */
  private journalBlockEvent(event: BlockEvent, slot: number): void {
    if (this.writer) this.unsaved.push({ slot, line: blockEventLine(event) });
  }

  /**
   * sendTransaction. With preflight, a transaction that would fail is refused (-32002, nothing
   * recorded); without, it executes and lands with its error and fee, as on a validator. A
   * stale blockhash never lands: refused with preflight, silently dropped without.
   */
  submit(wire: Uint8Array, options: { skipPreflight: boolean }): string {
    const tx = deserialize(wire);
    const signature = bs58.encode(tx.signatures[0] ?? new Uint8Array(64));
    if (this.store.get(signature)) {
      if (options.skipPreflight) return signature; // the chain dedupes a re-send
      throw preflightError('AlreadyProcessed', [], 0);
    }
    if (!this.isBlockhashValid(tx.message.recentBlockhash)) {
      if (options.skipPreflight) return signature; // dropped: it can never land
      throw preflightError('BlockhashNotFound', [], 0);
    }
    const refused = this.execute(wire, tx, signature, { preflight: !options.skipPreflight });
    if (refused) {
      if (refused.err === 'SignatureFailure') {
        throw new RpcError(
          RPC_CODES.signatureVerificationFailure,
          'Transaction signature verification failure',
        );
      }
      throw preflightError(refused.err, refused.logs, refused.unitsConsumed);
    }
    return signature;
  }

  simulate(
    wire: Uint8Array,
    options: { sigVerify: boolean; replaceRecentBlockhash: boolean },
  ): SimulationResult {
    const tx = deserialize(wire);
    if (!options.replaceRecentBlockhash && !this.isBlockhashValid(tx.message.recentBlockhash)) {
      return { err: 'BlockhashNotFound', logs: [], unitsConsumed: 0 };
    }
    return this.simulateParsed(wire, options.sigVerify);
  }

  /** requestAirdrop: a real System transfer from the localnet's faucet keypair. */
  airdrop(address: string, lamports: bigint): string {
    const tx = new Transaction({
      feePayer: this.faucet.publicKey,
      recentBlockhash: this.latestBlockhash().blockhash,
    }).add(
      SystemProgram.transfer({
        fromPubkey: this.faucet.publicKey,
        toPubkey: new PublicKey(address),
        lamports,
      }),
    );
    // The same amount to the same address twice in one slot would be the same transaction
    // (and deduplicated): a memo numbering the airdrop makes each one distinct.
    tx.add(
      new TransactionInstruction({
        programId: new PublicKey(PROGRAM.memo),
        keys: [],
        data: Buffer.from(`airdrop #${this.store.size}`),
      }),
    );
    tx.sign(this.faucet);
    return this.submit(tx.serialize(), { skipPreflight: false });
  }

  /**
   * Moves the clock `slots` slots forward at once (like solana-test-validator's --warp-slot),
   * producing a blockhash per slot: how tests age a blockhash past its 150 blocks.
   */
  warp(slots: number): void {
    for (let i = 0; i < slots; i++) this.tick();
  }

  /**
   * Resolves once everything that landed before the call is on disk (at once for a chain kept in
   * memory); rejects when the write fails. Tests use it to wait for `confirmed` without a clock.
   */
  async persist(): Promise<void> {
    if (!this.writer) return;
    const target = this.store.size;
    while (this.saving) await this.saving;
    if (this.durableSeq < target || this.unsaved.length > 0) await this.startSave({ rethrow: true });
  }

  /** Stops the clock and writes everything with a fresh snapshot (a restart replays nothing). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    if (!this.writer || this.closing) return;
    this.closing = true;
    try {
      while (this.saving) await this.saving;
      await this.startSave({ rethrow: true, snapshot: true });
    } finally {
      this.writer.close();
    }
  }

  private simulateParsed(wire: Uint8Array, sigVerify: boolean): SimulationResult {
    if (!sigVerify) this.vm.setSigverify(false);
    try {
      const result = this.vm.simulateVersionedTransaction(wire);
      if (result instanceof svm.FailedTransactionMetadata) {
        const meta = result.meta();
        return {
          err: toValidatorError(result.err()),
          logs: meta.logs(),
          unitsConsumed: Number(meta.computeUnitsConsumed()),
        };
      }
      const meta = result.meta();
      return { err: null, logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()) };
    } finally {
      if (!sigVerify) this.vm.setSigverify(true);
    }
  }

  /**
   * Runs the transaction against the bank and records it. With `preflight`, one that fails is
   * undone (its accounts put back as they were: a failure only took the fee) and returned instead
   * of landing, which is what a simulation followed by the execution would decide, for one run of
   * the program instead of two (the simulation was half of the localnet's time per payment).
   */
  private execute(
    wire: Uint8Array,
    tx: VersionedTransaction,
    signature: string,
    options: { preflight: boolean },
  ): (SimulationResult & { err: ValidatorError }) | undefined {
    const { keys, loadedAddresses } = this.resolveAccountKeys(tx);
    // Static keys are already bytes in the message; only lookup-table addresses need decoding.
    const staticKeys = tx.message.staticAccountKeys;
    const keyBytes = keys.map((key, i) =>
      i < staticKeys.length ? staticKeys[i]!.toBytes() : addressBytes(key),
    );
    const pre = keyBytes.map((key) => this.vm.getAccount(key));

    const result = this.vm.sendVersionedTransaction(wire);
    const failure = result instanceof svm.FailedTransactionMetadata ? result : undefined;
    const failed = failure !== undefined;
    const meta: TransactionMetadata = failure ? failure.meta() : (result as TransactionMetadata);
    if (failure && options.preflight) {
      keyBytes.forEach((key, i) => {
        const before = pre[i];
        if (before) this.vm.setAccount(key, before);
      });
      return {
        err: toValidatorError(failure.err()),
        logs: meta.logs(),
        unitsConsumed: Number(meta.computeUnitsConsumed()),
      };
    }
    // Errors found before execution (fee payer missing, bad signature, ...) never land.
    if (failed && meta.signature().every((byte) => byte === 0)) return undefined;

    const post = keyBytes.map((key) => this.vm.getAccount(key));
    const record: TransactionRecord = {
      seq: this.store.nextSeq(),
      signature,
      slot: this.state.slot,
      blockTime: Math.floor(this.slotStartedAt / 1000),
      wire: Buffer.from(wire).toString('base64'),
      version: tx.version === 'legacy' ? 'legacy' : 0,
      accountKeys: keys,
      loadedAddresses,
      err: failure ? toValidatorError(failure.err()) : null,
      fee: LAMPORTS_PER_SIGNATURE * tx.message.header.numRequiredSignatures,
      preBalances: pre.map((a) => Number(a?.lamports() ?? 0n)),
      postBalances: post.map((a) => Number(a?.lamports() ?? 0n)),
      preTokenBalances: this.tokenBalances(pre),
      postTokenBalances: this.tokenBalances(post),
      innerInstructions: meta
        .innerInstructions()
        .map((list, index) => ({
          index,
          instructions: list.map((inner) => {
            const ix = inner.instruction();
            return {
              programIdIndex: ix.programIdIndex(),
              accounts: [...ix.accounts()],
              data: bs58.encode(ix.data()),
              stackHeight: inner.stackHeight(),
            };
          }),
        }))
        .filter((entry) => entry.instructions.length > 0),
      logMessages: meta.logs(),
      computeUnitsConsumed: Number(meta.computeUnitsConsumed()),
      memo: memoOf(tx, keys),
    };
    this.store.add(record);
    const before = new Map<string, SvmAccount | null>();
    keys.forEach((key, i) => {
      if (tx.message.isAccountWritable(i)) before.set(key, pre[i] ?? null);
    });
    this.unsettled.push({ seq: record.seq, slot: record.slot, before });
    if (this.writer) {
      // Encoded now, while the accounts are as it left them: ~30 us under load, half of it the
      // record's JSON, which the history always needed.
      const writes = keyBytes.flatMap((key, i) =>
        tx.message.isAccountWritable(i) ? [{ key, account: post[i] ?? null }] : [],
      );
      this.unsaved.push({ slot: record.slot, line: recordLine(record, packAccounts(writes)) });
    }
    this.emit('landed', record);
    return undefined;
  }

  /**
   * Token balances of the accounts a transaction touches, read before and after it (litesvm
   * reports none). On the hot path of every transaction: owners are compared as bytes and mint
   * decimals (immutable once a mint exists) are cached, so only token accounts cost any decoding.
   */
  private tokenBalances(accounts: Array<ReturnType<LiteSvm['getAccount']>>): TokenBalance[] {
    const balances: TokenBalance[] = [];
    accounts.forEach((account, accountIndex) => {
      if (!account) return;
      const programId = tokenProgramOf(account.owner());
      if (!programId) return;
      const token = decodeTokenAccount(account.data());
      if (!token) return;
      const decimals = this.mintDecimals(token.mint);
      balances.push({
        accountIndex,
        mint: token.mint,
        owner: token.owner,
        programId,
        amount: token.amount.toString(),
        decimals,
      });
    });
    return balances;
  }

  private readonly decimalsByMint = new Map<string, number>();

  private mintDecimals(mint: string): number {
    let decimals = this.decimalsByMint.get(mint);
    if (decimals === undefined) {
      const account = this.vm.getAccount(addressBytes(mint));
      const decoded = account ? decodeMint(account.data()) : undefined;
      if (!decoded) return 0; // not a mint (yet): do not cache
      decimals = decoded.decimals;
      this.decimalsByMint.set(mint, decimals);
    }
    return decimals;
  }

  /** Static keys, then addresses loaded from lookup tables: writable first, then readonly. */
  private resolveAccountKeys(tx: VersionedTransaction) {
    const keys = tx.message.staticAccountKeys.map((key) => key.toBase58());
    const loadedAddresses = { writable: [] as string[], readonly: [] as string[] };
    for (const lookup of tx.message.addressTableLookups) {
      const table = this.vm.getAccount(lookup.accountKey.toBytes());
      const data = table?.data();
      const addressAt = (index: number) => {
        const offset = 56 + index * 32; // lookup-table header is 56 bytes
        if (!data || offset + 32 > data.length) throw preflightError('InvalidAddressLookupTableIndex', [], 0);
        return bs58.encode(data.subarray(offset, offset + 32));
      };
      loadedAddresses.writable.push(...lookup.writableIndexes.map(addressAt));
      loadedAddresses.readonly.push(...lookup.readonlyIndexes.map(addressAt));
    }
    return { keys: [...keys, ...loadedAddresses.writable, ...loadedAddresses.readonly], loadedAddresses };
  }

  private advanceSlot(next: boolean): void {
    if (next) {
      if (this.pendingSkips > 0) {
        const skip: number[] = [];
        for (; this.pendingSkips > 0; this.pendingSkips--) skip.push(this.state.slot + 1 + skip.length);
        this.blocks.apply({ skip });
        this.journalBlockEvent({ skip }, skip[0]!);
        this.state.slot += skip.length;
      }
      this.state.slot += 1;
      this.state.blockHeight += 1;
    }
    this.slotStartedAt = Date.now();
    const unixTimestamp = BigInt(Math.floor(this.slotStartedAt / 1000));
    const epoch = BigInt(this.epoch);
    this.vm.setClock(new svm.Clock(BigInt(this.state.slot), unixTimestamp, epoch, epoch, unixTimestamp));
    this.vm.expireBlockhash();
    this.blockhashes.push({
      // The block's own, from a seed drawn afresh at every start (block-ledger.ts), not litesvm's
      // (which our queue does not need: its check is off). litesvm derives each from the one
      // before, so a chain restarted from a snapshot older than chain.json's queue would issue
      // again blockhashes it had already issued, and expired ones would live again: a transaction
      // dropped long ago could land when re-sent.
      blockhash: this.blocks.blockhashOf(this.state.slot),
      slot: this.state.slot,
      lastValidBlockHeight: this.state.blockHeight + BLOCKHASH_VALIDITY_BLOCKS,
    });
    this.blockhashes.prune(this.state.blockHeight);
    if (next) this.emit('slot', this.state.slot);
  }

  private tick(): void {
    this.advanceSlot(true);
    this.saveSoon();
    let settled = 0;
    while (settled < this.unsettled.length) {
      const entry = this.unsettled[settled]!;
      if (this.commitmentAt(entry.seq, entry.slot) !== 'finalized') break;
      settled++;
    }
    if (settled > 0) this.unsettled.splice(0, settled);
  }

  /**
   * Writes what landed in the slots before the current one, once per slot: they become
   * `confirmed` as the write completes, about when a slot would have confirmed them. Slots alone
   * are cheap to lose and are not written on their own. One write at a time; when one ends and
   * lines of an earlier slot are waiting (they landed while it ran), the next starts at once.
   */
  private saveSoon(): void {
    if (!this.writer || this.saving || this.closing) return;
    if (this.unsaved.length === 0) return;
    void this.startSave({ rethrow: false }).then(() => {
      const first = this.unsaved[0];
      if (first && first.slot < this.state.slot && !this.saveFailed) this.saveSoon();
    });
  }

  /**
   * One batch: the journal lines waiting now (encoded here, on the event loop), litesvm's
   * snapshot when one is due, chain.json; then the transactions in it are durable. A failed
   * write keeps its lines waiting for the next slot's attempt (and is logged once).
   */
  private startSave(options: { rethrow: boolean; snapshot?: boolean }): Promise<void> {
    const writer = this.writer!;
    const count = this.unsaved.length;
    const throughSeq = this.store.size;
    this.forkFloor = Infinity;
    const text = this.unsaved
      .slice(0, count)
      .map((unsaved) => unsaved.line)
      .join('');
    const snapshotDue = options.snapshot === true || Date.now() - this.lastSnapshotAt >= SNAPSHOT_INTERVAL_MS;
    // saveToFile, not toBytes: a third to a half of the time on the loop (page cache, no copy).
    const snapshot = snapshotDue ? (file: string) => this.vm.saveToFile(file) : undefined;
    this.state.blockhashes = this.blockhashes.toJSON();
    const state = { ...this.state };
    const saving = writer
      .write({ text, lines: count, snapshot, state })
      .then(
        ({ snapshotError }) => {
          this.unsaved.splice(0, count);
          const through = Math.min(throughSeq, this.forkFloor);
          if (through > this.durableSeq) this.durableSeq = through;
          if (snapshot) this.lastSnapshotAt = Date.now();
          if (snapshotError !== undefined && !this.snapshotFailed) {
            console.error(
              'localnet: litesvm could not take a snapshot (the journal keeps the chain; ' +
                'a restart replays it from the last snapshot):',
              snapshotError,
            );
          }
          this.snapshotFailed = snapshotError !== undefined;
          if (this.saveFailed) console.error('localnet: writing the chain works again');
          this.saveFailed = false;
          this.emit('durable', this.durableSeq);
        },
        (error: unknown) => {
          if (!this.saveFailed) {
            console.error(
              `localnet: writing the chain to ${this.options.dir} failed (retried every slot; ` +
                `transactions stay processed until it works):`,
              error,
            );
          }
          this.saveFailed = true;
          if (options.rethrow) throw error;
        },
      )
      .finally(() => {
        if (this.saving === saving) this.saving = undefined;
      });
    this.saving = saving;
    return saving;
  }
}

/** A journal line waiting to be written: a landed transaction or a placed account, encoded. */
interface UnsavedLine {
  slot: number;
  line: string;
}

function accountView(account: SvmAccount): AccountView {
  return {
    lamports: account.lamports(),
    data: account.data(),
    owner: bs58.encode(account.owner()),
    executable: account.executable(),
    rentEpoch: account.rentEpoch(),
  };
}

function genesis(vm: LiteSvm): ChainState {
  const faucet = Keypair.generate();
  vm.setAccount(
    faucet.publicKey.toBytes(),
    new svm.Account(FAUCET_LAMPORTS, new Uint8Array(0), new Uint8Array(32), false, 0n),
  );
  return {
    genesisHash: bs58.encode(randomBytes(32)),
    slot: 0,
    blockHeight: 0,
    blockhashes: [],
    snapshotLines: 0,
    faucetSecret: bs58.encode(faucet.secretKey),
  };
}

/**
 * litesvm aborts the process on bytes it cannot deserialize, so every transaction is parsed by
 * web3.js first; what fails here is a -32602, not a crash.
 */
function deserialize(wire: Uint8Array): VersionedTransaction {
  try {
    const tx = VersionedTransaction.deserialize(wire);
    if (tx.signatures.length === 0) throw new Error('no signatures');
    return tx;
  } catch (error) {
    throw invalidParams(`failed to deserialize transaction: ${(error as Error).message}`);
  }
}

/** 32-byte key of a base58 address; refuses anything else before it reaches native code. */
export function addressBytes(address: string): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(address);
  } catch {
    throw invalidParams(`invalid address: ${address}`);
  }
  if (bytes.length !== 32) throw invalidParams(`invalid address: ${address}`);
  return bytes;
}

function preflightError(err: ValidatorError, logs: string[], unitsConsumed: number): RpcError {
  return new RpcError(
    RPC_CODES.preflightFailure,
    `Transaction simulation failed: ${describeValidatorError(err)}`,
    {
      err,
      logs,
      accounts: null,
      unitsConsumed,
      returnData: null,
    },
  );
}

/** The `memo` field of getSignaturesForAddress: "[len] text" per memo instruction, "; "-joined. */
function memoOf(tx: VersionedTransaction, keys: string[]): string | null {
  const memos: string[] = [];
  for (const ix of tx.message.compiledInstructions) {
    const program = keys[ix.programIdIndex];
    if (program !== PROGRAM.memo && program !== PROGRAM.memoV1) continue;
    memos.push(`[${ix.data.length}] ${Buffer.from(ix.data).toString('utf8')}`);
  }
  return memos.length > 0 ? memos.join('; ') : null;
}

const TOKEN_PROGRAM_BYTES = [PROGRAM.token, PROGRAM.token2022].map((id) => ({ id, bytes: bs58.decode(id) }));

/** The token program that owns an account, by comparing its 32 owner bytes; undefined otherwise. */
function tokenProgramOf(owner: Uint8Array): string | undefined {
  return TOKEN_PROGRAM_BYTES.find(({ bytes }) => Buffer.compare(bytes, owner) === 0)?.id;
}
