import type { PublicKey } from '@solana/web3.js';
import { Transaction } from '@solana/web3.js';
import {
  buildTransfer,
  signerFromSeed,
  signTransaction,
  USDC_DECIMALS,
  type Keystore,
  type PlatformChain,
  type RpcClient,
  type Signer,
  type TransferLeg,
} from '../../adapters/solana/index.js';
import {
  sql,
  type Insertable,
  type OperationNodeSource,
  type RawBuilder,
  type Transaction as DbTransaction,
} from 'kysely';
import type { Database, DomainEventsTable } from '../../adapters/postgres/database.js';
import type { Db } from '../../adapters/postgres/db.js';
import {
  recordResourceCall,
  takenOverRefusal,
  type KeyOwner,
  type RecordedResource,
} from '../../adapters/postgres/idempotency.repository.js';
import { ledgerRefusal, movementCall } from '../../adapters/postgres/ledger.repository.js';
import type { MovementInput } from '../../domain/ledger/ledger-store.port.js';

/**
 * Unsealed signers of recently active wallets, per keystore. Unsealing costs a query, an AES-GCM
 * open and building a key object (~1 ms of CPU, most of a paid post's): active accounts pay it
 * once. A wallet's key never changes, so an entry never goes stale; the map is bounded.
 */
const signerCaches = new WeakMap<Keystore, Map<string, Signer>>();
const MAX_CACHED_SIGNERS = 10_000;

/** The signer of a user's custodial wallet. */
export async function walletSigner(db: Db, keystore: Keystore, accountId: string): Promise<Signer> {
  let cache = signerCaches.get(keystore);
  if (!cache) signerCaches.set(keystore, (cache = new Map<string, Signer>()));
  const cached = cache.get(accountId);
  if (cached) return cached;
  const row = await db
    .selectFrom('accounts')
    .select(['wallet_address', 'wallet_secret'])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
  if (!row.wallet_address || !row.wallet_secret)
    throw new Error(`account ${accountId} has no custodial wallet`);
  const signer = signerFromSeed(keystore.decrypt(row.wallet_secret, row.wallet_address));
  // Oldest first out: a Map iterates in insertion order.
  if (cache.size >= MAX_CACHED_SIGNERS) cache.delete(cache.keys().next().value!);
  cache.set(accountId, signer);
  return signer;
}

/**
 * A recent blockhash, shared for up to a second per RPC client: every payment signed in that
 * second uses it. A blockhash lives 150 slots (~60 s), so this costs at most a second of it and
 * saves an RPC round trip per payment.
 */
const blockhashCaches = new WeakMap<
  RpcClient,
  { at: number; value: Promise<{ blockhash: string; lastValidBlockHeight: number }> }
>();
const BLOCKHASH_REUSE_MS = 1_000;

function recentBlockhash(rpc: RpcClient): Promise<{ blockhash: string; lastValidBlockHeight: number }> {
  const cached = blockhashCaches.get(rpc);
  if (cached && Date.now() - cached.at < BLOCKHASH_REUSE_MS) return cached.value;
  const value = rpc.getLatestBlockhash('confirmed');
  blockhashCaches.set(rpc, { at: Date.now(), value });
  value.catch(() => blockhashCaches.delete(rpc)); // a failed read is not reused
  return value;
}

export interface UsdcPayment {
  from: Signer;
  /**
   * Owner wallets and amounts (micro-USD = USDC base units), one transferChecked each.
   * `createAccount`: the owner may have no USDC account yet (a user wallet gets none at sign-up;
   * its first incoming payment creates it, idempotently, rent paid by the fee payer). Not needed to
   * pay the platform's wallets (the bootstrap made their accounts) nor a post's author (paying for
   * the post took USDC, so the author's account exists, and token accounts are never closed).
   */
  to: Array<{ owner: PublicKey; amountMicro: bigint; createAccount?: boolean }>;
  memo: string;
}

export interface SignedPayment {
  wire: Buffer;
  signature: string;
  blockhash: string;
  lastValidBlockHeight: number;
}

/**
 * One atomic USDC transaction: every leg from the payer's wallet, a Memo, the platform fee payer
 * paying SOL. Signed here; sent later by the payments worker from the outbox.
 */
export function signUsdcPayment(
  rpc: RpcClient,
  platform: PlatformChain,
  payment: UsdcPayment,
): Promise<SignedPayment> {
  return signTransfer(rpc, platform, {
    legs: payment.to.map(({ owner, amountMicro, createAccount }) => ({
      mint: platform.usdcMint,
      decimals: USDC_DECIMALS,
      from: payment.from.publicKey,
      to: owner,
      amount: amountMicro,
      createRecipientAta: createAccount ?? false,
    })),
    memo: payment.memo,
    signers: [payment.from],
  });
}

/**
 * Any platform money move's transaction (a USDC payment, a swap, a creator-fund batch): the legs
 * in order, a Memo, the platform fee payer paying SOL and signing with `signers` (every wallet a
 * leg takes tokens from), under a recent blockhash.
 */
export async function signTransfer(
  rpc: RpcClient,
  platform: PlatformChain,
  transfer: { legs: TransferLeg[]; memo: string; signers: Signer[] },
): Promise<SignedPayment> {
  const { blockhash, lastValidBlockHeight } = await recentBlockhash(rpc);
  const tx = buildTransfer({
    feePayer: platform.signers.fee_payer.publicKey,
    recentBlockhash: blockhash,
    legs: transfer.legs,
    memo: transfer.memo,
    computeUnitPriceMicroLamports: platform.priorityFeeMicroLamports,
  });
  const signed = signTransaction(tx, [platform.signers.fee_payer, ...transfer.signers]);
  return { ...signed, blockhash, lastValidBlockHeight };
}

/**
 * The same message under a fresh blockhash: what the worker sends when the first blockhash
 * expired with nothing landed. The signature (and so `swap_tx`) changes.
 */
export async function resignPayment(rpc: RpcClient, wire: Buffer, signers: Signer[]): Promise<SignedPayment> {
  const { blockhash, lastValidBlockHeight } = await rpc.getLatestBlockhash('confirmed');
  const original = Transaction.from(wire);
  const tx = new Transaction({ feePayer: original.feePayer!, recentBlockhash: blockhash }).add(
    ...original.instructions,
  );
  const signed = signTransaction(tx, signers);
  return { ...signed, blockhash, lastValidBlockHeight };
}

/** The outbox row of a signed payment, paying for the movement `movementId` (an id or SQL). */
function outboxRow(movementId: string | RawBuilder<string>, payment: SignedPayment) {
  return {
    movement_id: movementId,
    signature: payment.signature,
    wire: payment.wire,
    blockhash: payment.blockhash,
    last_valid_block_height: BigInt(payment.lastValidBlockHeight),
  };
}

/**
 * A paid write made under an Idempotency-Key: the request's claim on the key and the resource the
 * write creates, recorded on the key's row by the statement that commits the money move, and only
 * while the claim still owns the row (else the statement fails: 409, nothing committed).
 */
export interface KeyedWrite {
  claim: KeyOwner;
  resource: RecordedResource;
}

/**
 * Puts a signed payment in the outbox together with its domain event (and, for a keyed write, its
 * resource on the key's row), inside the caller's transaction (the one that also writes the ledger
 * movement and the domain row), in one statement, and returns the outbox row id the worker settles.
 */
export async function insertOutboxPayment(
  trx: DbTransaction<Database>,
  movementId: string,
  payment: SignedPayment,
  event: Insertable<DomainEventsTable>,
  idempotency?: KeyedWrite,
): Promise<string> {
  const withEvent = trx.with('event', (db) => db.insertInto('domain_events').values(event).returning('id'));
  if (!idempotency) {
    const row = await withEvent
      .insertInto('chain_transactions')
      .values(outboxRow(movementId, payment))
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }
  try {
    const row = await withEvent
      .with(
        (cte) => cte('recorded').materialized(),
        (qc) =>
          qc.selectNoFrom(recordResourceCall(idempotency.claim, idempotency.resource).as('resource_id')),
      )
      .insertInto('chain_transactions')
      .values(outboxRow(movementId, payment))
      // Returning it is what runs the recording call (an unreferenced SELECT CTE is skipped).
      .returning(['id', sql<string>`(SELECT resource_id FROM recorded)`.as('recorded')])
      .executeTakeFirstOrThrow();
    return row.id;
  } catch (error) {
    throw takenOverRefusal(error) ?? error;
  }
}

export interface PaidWrite {
  movement: MovementInput;
  /** The domain row's INSERT with its RETURNING, given the movement's id as an SQL expression. */
  row: (movementId: RawBuilder<string>) => OperationNodeSource;
  payment: SignedPayment;
  event: Insertable<DomainEventsTable>;
  /** Set when the write runs under an Idempotency-Key: its resource is recorded on the key's row. */
  idempotency?: KeyedWrite | undefined;
}

/**
 * Commits a paid write (post, reply, quote, send, swap) as one statement: the ledger movement (its
 * conditional debit refuses overspending), the domain row, the signed transaction in the outbox
 * and the domain event. One statement is one transaction: all of it commits or none does, in one
 * round trip that holds a pooled connection (and the payer's balance row lock) only while Postgres
 * works. Returns the outbox row id the worker settles and what the row's INSERT returned.
 *
 * Under an Idempotency-Key the same statement records the write's resource on the key's row, if
 * the request still owns it (no extra round trip; none of this without a key). A write whose key
 * a retry took over (its lease ran out) commits nothing and fails with 409; a repeat that takes a
 * key over therefore finds either the resource, or the certainty that nothing was charged.
 */
export async function commitPaidWrite<Row>(
  db: Db,
  write: PaidWrite,
): Promise<{ chainTransactionId: string; row: Row }> {
  // Every part reads the id from the materialized CTE: the function runs exactly once.
  const movementId = sql<string>`(SELECT movement_id FROM movement)`;
  const keyed = write.idempotency;
  // Selected by the final SELECT, which is what runs it (an unreferenced SELECT CTE is skipped).
  const recorded = keyed
    ? sql`, recorded AS MATERIALIZED (SELECT ${recordResourceCall(keyed.claim, keyed.resource)} AS resource_id)`
    : sql``;
  const recordedColumn = keyed ? sql`, (SELECT resource_id FROM recorded) AS idempotency_resource_id` : sql``;
  try {
    const { rows } = await sql<Row & { chain_transaction_id: string; idempotency_resource_id?: string }>`
      WITH movement AS MATERIALIZED (SELECT movement_id FROM ${movementCall(write.movement)}),
           domain_row AS (${write.row(movementId)}),
           event AS (${db.insertInto('domain_events').values(write.event)}),
           outbox AS (${db.insertInto('chain_transactions').values(outboxRow(movementId, write.payment)).returning('id')})${recorded}
      SELECT domain_row.*, (SELECT id FROM outbox) AS chain_transaction_id${recordedColumn} FROM domain_row`.execute(
      db,
    );
    const { chain_transaction_id: chainTransactionId, idempotency_resource_id: _recorded, ...row } = rows[0]!;
    return { chainTransactionId, row: row as Row };
  } catch (error) {
    throw ledgerRefusal(error) ?? takenOverRefusal(error) ?? error;
  }
}

/** The keyed form of a write creating `kind` `id`, when it runs under an Idempotency-Key. */
export function keyedWrite(
  claim: KeyOwner | undefined,
  kind: RecordedResource['kind'],
  id: string,
): KeyedWrite | undefined {
  return (
    claim && {
      claim: { accountId: claim.accountId, key: claim.key, owner: claim.owner },
      resource: { kind, id },
    }
  );
}

/** What a committed paid write's payment looks like now, read back to answer a resumed request. */
export interface CommittedPaymentState {
  chainTransactionId: string;
  /** The current signature (a re-sign after blockhash expiry changes it). */
  swapTx: string;
  /** Failed on chain and reversed: nothing stayed charged. */
  failed: boolean;
  /** The payer's debit in the movement (its one negative leg: post, repost, send), positive. */
  debitMicro: bigint;
}

/** The outbox row and debit of the movement `movementId` (see CommittedPaymentState). */
export async function committedPayment(db: Db, movementId: string): Promise<CommittedPaymentState> {
  const row = await db
    .selectFrom('chain_transactions')
    .select([
      'id',
      'signature',
      'status',
      sql<string>`(SELECT -min(amount) FROM ledger_legs WHERE movement_id = chain_transactions.movement_id)`.as(
        'debit',
      ),
    ])
    .where('movement_id', '=', movementId)
    .executeTakeFirstOrThrow();
  return {
    chainTransactionId: row.id,
    swapTx: row.signature,
    failed: row.status === 'failed',
    debitMicro: BigInt(row.debit),
  };
}
