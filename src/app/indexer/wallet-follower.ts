import { PublicKey } from '@solana/web3.js';
import type { ClickHouse } from '../../adapters/clickhouse/index.js';
import type { Db } from '../../adapters/postgres/db.js';
import { signaturesKnownToLedger } from '../../adapters/postgres/ledger-signatures.repository.js';
import { usersWithWallets } from '../../adapters/postgres/user-wallets.repository.js';
import {
  advanceWalletCursors,
  readWalletCursors,
} from '../../adapters/postgres/wallet-cursors.repository.js';
import {
  stageReconciliationExceptions,
  type ReconciliationException,
} from '../../adapters/postgres/reconciliation-events.repository.js';
import {
  associatedTokenAccount,
  ChainError,
  type PlatformChain,
  type RpcClient,
} from '../../adapters/solana/index.js';
import type { Metrics } from '../../observability/metrics.js';
import type { LedgerStore } from '../../domain/ledger/ledger-store.port.js';
import {
  fetchTransactions,
  recordTransactions,
  tokenDeltas,
  withBackoff,
  type FetchedTransaction,
} from './chain-reader.js';
import { unexplainedRow } from './unexplained-outflow.js';

export interface WalletFollowerDeps {
  db: Db;
  clickhouse: ClickHouse;
  rpc: RpcClient;
  metrics: Metrics;
  ledger: LedgerStore;
  bootstrapChain(): Promise<PlatformChain>;
}

export interface FollowOptions {
  /** Signatures per getSignaturesForAddress page (1..1000). @defaultValue 1000 */
  pageSize?: number;
  /** Addresses per JSON-RPC batch; their signatures are processed and their cursors advanced together. @defaultValue 100 */
  addressesPerBatch?: number;
}

export interface FollowRound {
  /** Token accounts followed this round. */
  addresses: number;
  /** New signatures the ledger did not cause (deduplicated across addresses). */
  signatures: number;
  /**
   * Deposits the ledger had already recorded (the faucets', or credited by an earlier round) seen
   * this round: indexed into ClickHouse, never credited again.
   */
  recorded: number;
  /** Deposits credited this round (not counting ones another follower credited first). */
  deposits: number;
  /** Transactions that took USDC out of one of our wallets without the ledger. */
  unexplained: number;
}

const MAX_PAGE = 1_000;

/** A followed token account and where its last round stopped. */
interface Followed {
  address: string;
  lastSignature: string | null;
  lastSlot: bigint | null;
}

interface SignatureInfo {
  signature: string;
  slot: number;
}

/** Who our wallets are: a name per owner address, and the account behind each user wallet. */
interface OurWallets {
  labels: Map<string, string>;
  users: Map<string, string>;
  platform: readonly string[];
  /** The user wallets whose account has a native ledger account. */
  nativeUsers: readonly string[];
}

/**
 * One round of the wallet follower: lists the new signatures of every USDC and native token
 * account we own (the platform's, the swap pool's vaults and each user's), leaves the outbox's
 * transactions (also their replaced signatures) to the reconciler, indexes the deposits the ledger
 * already recorded without judging them, and judges the rest from their token balances. Every
 * fetched transaction and its token movements go to ClickHouse. USDC that reached a user from outside is credited as a deposit keyed by its
 * signature (exactly once, whoever sees it first); USDC that left one of our wallets is an
 * `unexplained` reconciliation row. Each address's cursor moves only after its signatures were
 * handled: a crash re-reads them (every effect is idempotent) instead of skipping them.
 */
export async function followWallets(
  deps: WalletFollowerDeps,
  options: FollowOptions = {},
): Promise<FollowRound> {
  const pageSize = options.pageSize ?? MAX_PAGE;
  const perBatch = options.addressesPerBatch ?? 100;
  const platform = await deps.bootstrapChain();
  const wallets = await ourWallets(deps.db, platform);
  const addresses = followedAddresses(platform, wallets);
  const round: FollowRound = {
    addresses: addresses.length,
    signatures: 0,
    recorded: 0,
    deposits: 0,
    unexplained: 0,
  };
  // A transaction touching several of our accounts is listed for each: judge it once a round.
  const judged = new Set<string>();
  for (let from = 0; from < addresses.length; from += perBatch) {
    // Cursors are read a batch at a time: one statement for every address of a large deployment
    // would pass a parameter per address, and Postgres takes at most 65,535.
    const batch = await withCursors(deps.db, addresses.slice(from, from + perBatch));
    const found = await newSignatures(deps, batch, pageSize);
    const fresh = [...new Set([...found.values()].flat().map((s) => s.signature))].filter(
      (s) => !judged.has(s),
    );
    fresh.forEach((signature) => judged.add(signature));
    const outcome = await judgeSignatures(deps, platform, wallets, fresh);
    round.signatures += outcome.signatures;
    round.recorded += outcome.recorded;
    round.deposits += outcome.deposits;
    round.unexplained += outcome.unexplained;
    await advanceCursors(deps.db, found);
  }
  return round;
}

async function ourWallets(db: Db, platform: PlatformChain): Promise<OurWallets> {
  // The pool authority's token accounts are the swap pool's vaults: followed like the others, so
  // what reaches them outside the ledger (the bootstrap's seed, a top-up) is indexed too.
  const followedRoles = ['treasury', 'creator_fund', 'fee_payer', 'pool_authority'] as const;
  const labels = new Map<string, string>();
  for (const role of followedRoles) labels.set(platform.signers[role].publicKey.toBase58(), role);
  const users = new Map<string, string>();
  const nativeUsers: string[] = [];
  for (const { id, handle, wallet_address: wallet, has_native } of await usersWithWallets(db)) {
    users.set(wallet, id);
    labels.set(wallet, `@${handle}`);
    if (has_native) nativeUsers.push(wallet);
  }
  const followedPlatform = followedRoles.map((role) => platform.signers[role].publicKey.toBase58());
  return { labels, users, platform: followedPlatform, nativeUsers };
}

/**
 * The associated token accounts of our wallets: USDC of every wallet, native of the platform's and
 * of the users who have a native ledger account. Followed as token accounts, not owners: a
 * transfer into an ATA names the token account, never its owner (NOTES "Indexing Solana"). So that
 * every token movement balance.summary's `chain_closing` reads reaches `token_movements`; a user
 * without a native ledger account has no native row there, so their native token account is not
 * listed every round (it is from the round after their first native movement, which reads its
 * whole history as for any new address). A token account that does not exist (yet) simply lists
 * no signatures.
 */
function followedAddresses(platform: PlatformChain, wallets: OurWallets): string[] {
  const ata = (mint: PublicKey, owner: string) =>
    associatedTokenAccount(mint, new PublicKey(owner)).toBase58();
  return [
    ...[...wallets.platform, ...wallets.users.keys()].map((owner) => ata(platform.usdcMint, owner)),
    ...[...wallets.platform, ...wallets.nativeUsers].map((owner) => ata(platform.nativeMint, owner)),
  ];
}

async function withCursors(db: Db, addresses: string[]): Promise<Followed[]> {
  if (addresses.length === 0) return [];
  const rows = await readWalletCursors(db, addresses);
  const cursors = new Map(rows.map((row) => [row.address, row]));
  return addresses.map((address) => ({
    address,
    lastSignature: cursors.get(address)?.last_signature ?? null,
    lastSlot: cursors.get(address)?.last_slot ?? null,
  }));
}

/**
 * Every signature of each address newer than its cursor, newest first. Pages are fetched for all
 * addresses in one batched request, walking `before` back while an address's page is full, so
 * nothing between the cursor and now is missed. `until` stops at the cursor; the cursor's slot is
 * checked too, because a cluster that no longer knows the `until` signature ignores it.
 */
async function newSignatures(
  deps: WalletFollowerDeps,
  addresses: readonly Followed[],
  pageSize: number,
): Promise<Map<string, SignatureInfo[]>> {
  const found = new Map<string, SignatureInfo[]>(addresses.map((a) => [a.address, []]));
  let walking = addresses.map((followed) => ({ followed, before: undefined as string | undefined }));
  while (walking.length > 0) {
    const answers = await counted(deps, () =>
      withBackoff(() =>
        deps.rpc.batch<SignatureInfo[]>(
          walking.map(({ followed, before }) => ({
            method: 'getSignaturesForAddress',
            params: [
              followed.address,
              {
                limit: pageSize,
                commitment: 'confirmed',
                ...(before ? { before } : {}),
                ...(followed.lastSignature ? { until: followed.lastSignature } : {}),
              },
            ],
          })),
        ),
      ),
    );
    const next: typeof walking = [];
    answers.forEach((answer, i) => {
      const { followed } = walking[i]!;
      if ('error' in answer) throw countError(deps, answer.error);
      const page = answer.result;
      const kept = page.filter((s) => followed.lastSlot === null || BigInt(s.slot) >= followed.lastSlot);
      found.get(followed.address)!.push(...kept);
      if (page.length === pageSize && kept.length === page.length) {
        next.push({ followed, before: page[page.length - 1]!.signature });
      }
    });
    walking = next;
  }
  return found;
}

/**
 * Deduplicated signatures of one batch of addresses. Outbox transactions are left to the
 * reconciler, which fetches, judges and indexes them. A deposit the ledger already recorded (the
 * faucets credit the ledger themselves) is fetched and indexed only: the chain's side in
 * ClickHouse must be complete whoever credited the ledger. Every other signature is fetched,
 * judged and indexed.
 */
async function judgeSignatures(
  deps: WalletFollowerDeps,
  platform: PlatformChain,
  wallets: OurWallets,
  signatures: string[],
): Promise<Omit<FollowRound, 'addresses'>> {
  const ours = await signaturesKnownToLedger(deps.db, signatures);
  const unknown = signatures.filter((s) => !ours.has(s));
  const recorded = signatures.filter((s) => ours.get(s) === 'deposit');
  const outcome = { signatures: unknown.length, recorded: recorded.length, deposits: 0, unexplained: 0 };
  if (unknown.length === 0 && recorded.length === 0) return outcome;
  // fetchTransactions retries on its own.
  const fetched = await counted(deps, () =>
    fetchTransactions(deps.rpc, [...unknown, ...recorded], 'confirmed'),
  );
  const mint = platform.usdcMint.toBase58();
  const unexplainedRows: Array<Record<string, unknown>> = [];
  const exceptions: ReconciliationException[] = [];
  const transactions: FetchedTransaction[] = [];
  const now = new Date();
  for (const signature of recorded) {
    const tx = fetched.get(signature);
    if (!tx) throw new Error(`transaction ${signature} was listed but getTransaction found nothing`);
    transactions.push(tx);
  }
  for (const signature of unknown) {
    const tx = fetched.get(signature);
    // Listed at confirmed but not fetchable: fail the round (its cursors stay) and look again.
    if (!tx) throw new Error(`transaction ${signature} was listed but getTransaction found nothing`);
    transactions.push(tx);
    if (tx.err !== null) continue; // landed with an error: no token balance changed
    const verdict = judge(tokenDeltas(tx, mint), wallets);
    if (verdict.kind === 'deposit') {
      const { replayed } = await creditDeposit(deps.ledger, signature, verdict.credits);
      if (!replayed) outcome.deposits++;
    } else if (verdict.kind === 'unexplained') {
      const row = unexplainedRow(
        tx,
        verdict.outflows.map((o) => ({ ...o, label: wallets.labels.get(o.owner) ?? o.owner })),
        now,
      );
      unexplainedRows.push(row.clickhouse);
      exceptions.push(row.exception);
      deps.metrics.reconciliations.inc({ status: 'unexplained', commitment: 'confirmed' });
      outcome.unexplained++;
    }
  }
  await recordTransactions(deps.clickhouse, transactions);
  await deps.clickhouse.insertRows('reconciliation', unexplainedRows);
  // Before the cursors move: a crash in between judges these signatures again, and the dedupe key
  // (signature and verdict) tells finance once.
  await stageReconciliationExceptions(deps.db, exceptions);
  return outcome;
}

type Verdict =
  | { kind: 'deposit'; credits: Array<{ accountId: string; amount: bigint }> }
  | { kind: 'unexplained'; outflows: Array<{ owner: string; amount: bigint }> }
  | { kind: 'nothing' };

/**
 * What a transaction the ledger did not cause means for us. Money leaving any of our wallets is
 * unexplained, whoever received it (one of our other wallets included: the ledger moved nothing).
 * Money reaching users with nothing leaving our wallets came from outside: a deposit.
 */
function judge(deltas: ReadonlyMap<string, bigint>, wallets: OurWallets): Verdict {
  const outflows = [...deltas]
    .filter(([owner, amount]) => amount < 0n && wallets.labels.has(owner))
    .map(([owner, amount]) => ({ owner, amount: -amount }));
  if (outflows.length > 0) return { kind: 'unexplained', outflows };
  const credits = [...deltas]
    .filter(([owner, amount]) => amount > 0n && wallets.users.has(owner))
    .map(([owner, amount]) => ({ accountId: wallets.users.get(owner)!, amount }));
  return credits.length > 0 ? { kind: 'deposit', credits } : { kind: 'nothing' };
}

/**
 * One deposit movement per signature (one transaction may pay several users), keyed
 * `deposit:<signature>` like the faucet's: a signature is credited once, by whoever records it first.
 */
function creditDeposit(
  ledger: LedgerStore,
  signature: string,
  credits: Array<{ accountId: string; amount: bigint }>,
): Promise<{ replayed: boolean }> {
  const total = credits.reduce((sum, credit) => sum + credit.amount, 0n);
  return ledger.record({
    kind: 'deposit',
    idempotencyKey: `deposit:${signature}`,
    legs: [
      { account: { kind: 'external' }, units: -total, counts: 'none' },
      ...credits.map((credit) => ({
        account: { kind: 'user' as const, accountId: credit.accountId },
        units: credit.amount,
        counts: 'none' as const,
      })),
    ],
  });
}

/**
 * Moves each address's cursor to its newest signature (never backwards: see advanceWalletCursors).
 */
async function advanceCursors(db: Db, found: Map<string, SignatureInfo[]>): Promise<void> {
  const cursors = [...found]
    .filter(([, signatures]) => signatures.length > 0)
    .map(([address, signatures]) => ({
      address,
      last_signature: signatures[0]!.signature,
      last_slot: BigInt(signatures[0]!.slot),
    }));
  await advanceWalletCursors(db, cursors);
}

/** Chain failures that end a call (after its retries) are counted by kind, then rethrown. */
async function counted<T>(deps: WalletFollowerDeps, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw error instanceof ChainError ? countError(deps, error) : error;
  }
}

function countError(deps: WalletFollowerDeps, error: ChainError): ChainError {
  deps.metrics.rpcErrors.inc({ kind: error.kind });
  return error;
}
