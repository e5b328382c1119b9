import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { BlockhashEntry } from './blockhash-queue.js';
import { svm, type LiteSvm } from './svm-binding.js';
import type { TransactionRecord } from './transaction-store.js';

/** What the localnet keeps besides litesvm's own snapshot. */
export interface ChainState {
  genesisHash: string;
  slot: number;
  blockHeight: number;
  blockhashes: BlockhashEntry[];
  /** Records in transactions.jsonl that belong to this snapshot (later lines are discarded). */
  transactionCount: number;
  /** The faucet keypair behind requestAirdrop, base58 of its 64-byte secret. */
  faucetSecret: string;
}

const SNAPSHOT = 'svm.bin';
const STATE = 'chain.json';
const HISTORY = 'transactions.jsonl';

/**
 * Writes one consistent point: history lines first (append-only), then litesvm's snapshot, then
 * chain.json naming how many history lines belong to it. A crash between steps leaves chain.json
 * at the previous point, and loading ignores the extra lines.
 */
export function saveChainState(
  dir: string,
  vm: LiteSvm,
  state: ChainState,
  newRecords: TransactionRecord[],
): void {
  mkdirSync(dir, { recursive: true });
  if (newRecords.length > 0) {
    appendFileSync(path.join(dir, HISTORY), newRecords.map((r) => JSON.stringify(r)).join('\n') + '\n');
  }
  vm.saveToFile(path.join(dir, `${SNAPSHOT}.tmp`));
  renameSync(path.join(dir, `${SNAPSHOT}.tmp`), path.join(dir, SNAPSHOT));
  const saved: ChainState = { ...state, transactionCount: state.transactionCount + newRecords.length };
  state.transactionCount = saved.transactionCount;
  writeFileSync(path.join(dir, `${STATE}.tmp`), JSON.stringify(saved));
  renameSync(path.join(dir, `${STATE}.tmp`), path.join(dir, STATE));
}

export function loadChainState(
  dir: string,
): { vm: LiteSvm; state: ChainState; records: TransactionRecord[] } | undefined {
  if (!existsSync(path.join(dir, STATE)) || !existsSync(path.join(dir, SNAPSHOT))) return undefined;
  const state = JSON.parse(readFileSync(path.join(dir, STATE), 'utf8')) as ChainState;
  const vm = svm.LiteSvm.loadFromFile(path.join(dir, SNAPSHOT));
  const historyFile = path.join(dir, HISTORY);
  const lines = existsSync(historyFile) ? readFileSync(historyFile, 'utf8').split('\n').filter(Boolean) : [];
  const kept = lines.slice(0, state.transactionCount);
  if (kept.length !== lines.length) {
    // Lines written after the last complete save: drop them so history matches the snapshot.
    writeFileSync(historyFile, kept.map((line) => `${line}\n`).join(''));
  }
  return { vm, state, records: kept.map((line) => JSON.parse(line) as TransactionRecord) };
}
