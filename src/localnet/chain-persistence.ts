import {
  closeSync,
  existsSync,
  fdatasync,
  fsync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BlockEvent, Segment } from './block-ledger.js';
import type { BlockhashEntry } from './blockhash-queue.js';
import { svm, type LiteSvm, type SvmAccount } from './svm-binding.js';
import type { TransactionRecord } from './transaction-store.js';

/** What the localnet keeps besides litesvm's own snapshot (chain.json). */
export interface ChainState {
  genesisHash: string;
  slot: number;
  blockHeight: number;
  blockhashes: BlockhashEntry[];
  /**
   * Lines of transactions.jsonl whose effects svm.bin already holds; the lines after them are
   * replayed onto it from their after-images when the chain is loaded.
   */
  snapshotLines: number;
  /** The faucet keypair behind requestAirdrop, base58 of its 64-byte secret. */
  faucetSecret: string;
  /**
   * The blocks' first segment (block-ledger.ts), written with the fresh folder; later ones are
   * journal lines. Absent from folders made before blocks existed.
   */
  segment?: Segment;
}

/**
 * A line of the journal (transactions.jsonl): a landed transaction's record with `writes`, the
 * packed after-images of the accounts it could write (see packAccounts), or `setAccount`, one
 * packed account placed by `localnet_setAccount`. Lines written before the journal existed are
 * bare records, all of them inside the snapshot. Blocks add a few rare lines (block-ledger.ts):
 * a `segment` (the chain opened), `skip` (skipped slots), `prune` (history pruned below a slot)
 * and `fork`: the records from `dropFromSeq` on are gone, their accounts put back by `writes`,
 * and a new segment starts after `slot`.
 */
type JournalLine =
  | (TransactionRecord & { writes?: string })
  | { setAccount: string }
  | BlockEvent
  | { fork: { slot: number; dropFromSeq: number }; segment: Segment; writes: string };

/** The journal line of a change to the block ledger. */
export function blockEventLine(event: BlockEvent): string {
  return `${JSON.stringify(event)}\n`;
}

export function forkLine(
  fork: { slot: number; dropFromSeq: number },
  segment: Segment,
  writes: string,
): string {
  return `${JSON.stringify({ fork, segment, writes })}\n`;
}

const SNAPSHOT = 'svm.bin';
const STATE = 'chain.json';
const HISTORY = 'transactions.jsonl';

/**
 * Accounts as a change left them, packed for the journal: per account its 32-byte address, a flag
 * (0: the change removed it), lamports (u64 LE), owner (32 bytes), executable (u8), rent epoch
 * (u64 LE), data length (u32 LE) and data; base64 of the whole. Binary because it is paid for on
 * every transaction: base58 owners and a JSON object per account cost two to three times as much.
 */
export function packAccounts(accounts: Array<{ key: Uint8Array; account: SvmAccount | null }>): string {
  const datas = accounts.map(({ account }) => account?.data());
  const size = datas.reduce((total, data) => total + 33 + (data ? 53 + data.length : 0), 0);
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  accounts.forEach(({ key, account }, i) => {
    out.set(key, at);
    const data = datas[i];
    if (!account || !data) {
      out[at + 32] = 0;
      at += 33;
      return;
    }
    out[at + 32] = 1;
    out.writeBigUInt64LE(account.lamports(), at + 33);
    out.set(account.owner(), at + 41);
    out[at + 73] = account.executable() ? 1 : 0;
    out.writeBigUInt64LE(account.rentEpoch(), at + 74);
    out.writeUInt32LE(data.length, at + 82);
    out.set(data, at + 86);
    at += 86 + data.length;
  });
  return out.toString('base64');
}

/** The journal line of a landed transaction: its record with the packed after-images appended. */
export function recordLine(record: TransactionRecord, writes: string): string {
  const json = JSON.stringify(record);
  return `${json.slice(0, -1)},"writes":"${writes}"}\n`;
}

export function setAccountLine(packed: string): string {
  return `{"setAccount":"${packed}"}\n`;
}

/** Sets every packed account in `vm` as it is (removed ones as empty, zero-lamport accounts). */
function applyAccounts(vm: LiteSvm, packed: string): void {
  const bytes = Buffer.from(packed, 'base64');
  for (let at = 0; at < bytes.length;) {
    const key = bytes.subarray(at, at + 32);
    if (bytes[at + 32] === 0) {
      vm.setAccount(key, new svm.Account(0n, new Uint8Array(0), new Uint8Array(32), false, 0n));
      at += 33;
      continue;
    }
    const length = bytes.readUInt32LE(at + 82);
    vm.setAccount(
      key,
      new svm.Account(
        bytes.readBigUInt64LE(at + 33),
        bytes.subarray(at + 86, at + 86 + length),
        bytes.subarray(at + 41, at + 73),
        bytes[at + 73] === 1,
        bytes.readBigUInt64LE(at + 74),
      ),
    );
    at += 86 + length;
  }
}

/**
 * A fresh folder: litesvm's genesis snapshot, chain.json and an empty journal, written before the
 * chain takes its first transaction (a journal is replayed onto a snapshot, so one must exist).
 */
export function createChainState(dir: string, vm: LiteSvm, state: ChainState): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, HISTORY), '');
  vm.saveToFile(path.join(dir, `${SNAPSHOT}.tmp`));
  fsyncFileSync(path.join(dir, `${SNAPSHOT}.tmp`));
  renameSync(path.join(dir, `${SNAPSHOT}.tmp`), path.join(dir, SNAPSHOT));
  state.snapshotLines = 0;
  writeFileSync(path.join(dir, `${STATE}.tmp`), JSON.stringify(state));
  fsyncFileSync(path.join(dir, `${STATE}.tmp`));
  renameSync(path.join(dir, `${STATE}.tmp`), path.join(dir, STATE));
  fsyncFileSync(dir);
}

export interface LoadedChain {
  vm: LiteSvm;
  state: ChainState;
  records: TransactionRecord[];
  /** The block ledger's changes, in order (segments, skips, prunes, forks' segments). */
  blockEvents: BlockEvent[];
  /** Lines and bytes of the journal kept: where the next line goes. */
  lines: number;
  bytes: number;
}

/**
 * litesvm's snapshot, then every journal line after the ones it holds replayed from its
 * after-images, in order. Replaying an after-image is idempotent, so a snapshot newer than
 * chain.json says (a crash between writing the two) loads right too. A torn last line (a crash in
 * the middle of a write, which was never reported `confirmed`) is cut off, as is everything from a
 * line that cannot be replayed (one from before the journal that its snapshot does not hold).
 */
export function loadChainState(dir: string): LoadedChain | undefined {
  if (!existsSync(path.join(dir, STATE)) || !existsSync(path.join(dir, SNAPSHOT))) return undefined;
  const saved = JSON.parse(readFileSync(path.join(dir, STATE), 'utf8')) as ChainState & {
    transactionCount?: number;
  };
  // chain.json from before the journal counted the lines its snapshot held as transactionCount.
  const { transactionCount, ...rest } = saved;
  const state: ChainState = { ...rest, snapshotLines: saved.snapshotLines ?? transactionCount ?? 0 };
  const vm = svm.LiteSvm.loadFromFile(path.join(dir, SNAPSHOT));
  const historyFile = path.join(dir, HISTORY);
  const content = existsSync(historyFile) ? readFileSync(historyFile) : Buffer.alloc(0);

  const records: TransactionRecord[] = [];
  const blockEvents: BlockEvent[] = state.segment ? [{ segment: state.segment }] : [];
  let lines = 0;
  let bytes = 0;
  while (bytes < content.length) {
    const end = content.indexOf(0x0a, bytes);
    if (end < 0) break; // torn: no newline yet
    let line: JournalLine;
    try {
      line = JSON.parse(content.toString('utf8', bytes, end)) as JournalLine;
    } catch {
      break;
    }
    const replay = lines >= state.snapshotLines;
    if ('setAccount' in line) {
      if (replay) applyAccounts(vm, line.setAccount);
    } else if ('fork' in line) {
      records.splice(line.fork.dropFromSeq);
      if (replay) applyAccounts(vm, line.writes);
      blockEvents.push({ segment: line.segment });
    } else if ('segment' in line || 'skip' in line || 'prune' in line) {
      blockEvents.push(line);
    } else {
      const { writes, ...record } = line;
      if (replay) {
        if (writes === undefined) break;
        applyAccounts(vm, writes);
      }
      records.push(record);
    }
    lines += 1;
    bytes = end + 1;
  }
  if (bytes !== content.length) truncateSync(historyFile, bytes);
  if (lines < state.snapshotLines) {
    throw new Error(
      `${historyFile} holds ${lines} lines; its snapshot was taken after ${state.snapshotLines}`,
    );
  }
  // chain.json is written after the journal: the last lines may be from a slot it has not seen.
  const lastSlot = records.at(-1)?.slot ?? 0;
  if (lastSlot > state.slot) {
    state.blockHeight += lastSlot - state.slot;
    state.slot = lastSlot;
  }
  return { vm, state, records, blockEvents, lines, bytes };
}

export interface JournalBatch {
  /** Lines to append, each ending in a newline. */
  text: string;
  lines: number;
  /**
   * When a snapshot is due: writes litesvm's state, the one after the last of these lines, to the
   * file it is given (`vm.saveToFile`). Called at once, before the write yields, so that the
   * state is still that one. When it throws, the batch is written without a snapshot.
   */
  snapshot?: (file: string) => void;
  /** chain.json to write after them (its `snapshotLines` is filled in here). */
  state: ChainState;
}

const datasync = promisify(fdatasync);
const fullSync = promisify(fsync);

/**
 * Writes a localnet folder as the chain runs. The writes themselves go to the page cache at once
 * (a slot's journal lines are ~1-3 MB at 800 transactions/s: a millisecond or two); what takes
 * the disk's time, flushing them to it (fdatasync), runs in libuv's thread pool, every file of a
 * batch at once, so the batch costs the chain's event loop one wake-up (two with a snapshot: the
 * folder is flushed after the rename). Each step awaited on its own was a wake-up each, and a
 * loop busy executing transactions made each of them wait its turn: 50-600 ms per batch.
 *
 * Per batch: the journal lines at the journal's known end and chain.json's tmp file; then, when
 * due, litesvm's snapshot to its tmp file; all flushed to the disk; then the snapshot renamed into
 * place and the folder flushed; then chain.json renamed into place. Only then does the batch count.
 * A crash at any point leaves a loadable folder: chain.json names a complete snapshot, and the
 * journal is whole up to the last batch (a torn tail is cut off on load). One batch at a time:
 * the caller waits for each.
 */
export class ChainWriter {
  private readonly fd: number;
  /** A failed write may have left bytes after `bytes`: cut them off before the next batch counts. */
  private tail = false;

  constructor(
    private readonly dir: string,
    /** Journal lines and bytes on disk, and the lines the current snapshot holds. */
    private lines: number,
    private bytes: number,
    private snapshotLines: number,
  ) {
    const journal = path.join(dir, HISTORY);
    if (!existsSync(journal)) writeFileSync(journal, ''); // a folder saved before any transaction
    // Not 'a': O_APPEND ignores the position, and a retry must overwrite what a failed write left.
    this.fd = openSync(journal, 'r+');
  }

  /** Resolves once the batch is on disk, with the reason its snapshot could not be taken, if any. */
  async write(batch: JournalBatch): Promise<{ snapshotError?: unknown }> {
    const snapshotTmp = path.join(this.dir, `${SNAPSHOT}.tmp`);
    const stateTmp = path.join(this.dir, `${STATE}.tmp`);
    let snapshotTaken = false;
    let snapshotError: unknown;
    if (batch.snapshot) {
      try {
        batch.snapshot(snapshotTmp);
        snapshotTaken = true;
      } catch (error) {
        // litesvm 1.5.0 refuses a snapshot past ~43,000 accounts (a 4 MiB bincode limit): the
        // journal alone keeps the chain durable, a restart replays more of it.
        snapshotError = error;
      }
    }
    const lines = this.lines + batch.lines;
    const snapshotLines = snapshotTaken ? lines : this.snapshotLines;
    const opened: number[] = [];
    try {
      const buffer = Buffer.from(batch.text, 'utf8');
      for (let done = 0; done < buffer.length;) {
        done += writeSync(this.fd, buffer, done, buffer.length - done, this.bytes + done);
      }
      if (this.tail) ftruncateSync(this.fd, this.bytes + buffer.length);
      const stateFd = openSync(stateTmp, 'w');
      opened.push(stateFd);
      writeSync(stateFd, JSON.stringify({ ...batch.state, snapshotLines }));
      const flushes = [datasync(this.fd), datasync(stateFd)];
      if (snapshotTaken) {
        const snapshotFd = openSync(snapshotTmp, 'r');
        opened.push(snapshotFd);
        flushes.push(fullSync(snapshotFd));
      }
      await Promise.all(flushes);
      this.bytes += buffer.length;
      this.lines = lines;
      this.tail = false;
    } catch (error) {
      this.tail = true;
      throw error;
    } finally {
      for (const fd of opened) closeSync(fd);
    }
    if (snapshotTaken) {
      renameSync(snapshotTmp, path.join(this.dir, SNAPSHOT));
      // chain.json is about to name this snapshot: the rename must be on the disk first.
      const dirFd = openSync(this.dir, 'r');
      try {
        await fullSync(dirFd);
      } finally {
        closeSync(dirFd);
      }
      this.snapshotLines = snapshotLines;
    }
    renameSync(stateTmp, path.join(this.dir, STATE));
    return { snapshotError };
  }

  close(): void {
    closeSync(this.fd);
  }
}

function fsyncFileSync(file: string): void {
  const fd = openSync(file, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
