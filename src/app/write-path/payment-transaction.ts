import { sealedUserWallet } from '../../adapters/postgres/custodial-wallets.repository.js';
import type { Db } from '../../adapters/postgres/db.js';
import type { KeyOwner, RecordedResource } from '../../adapters/postgres/idempotency.repository.js';
import { outboxRowOfMovement } from '../../adapters/postgres/outbox-reads.repository.js';
import {
  writeOutboxPayment,
  type DomainEventRow,
  type KeyedWrite,
  type PaidRowInsert,
} from '../../adapters/postgres/outbox-writer.js';
import type { Tx } from '../../adapters/postgres/tx.js';
import type { SignedOutboxRow } from '../../adapters/redis/payments-queue.js';
import type { Keystore, Signer } from '../../adapters/solana/index.js';
import { cachedWalletSigner, type SignedPayment } from '../../adapters/solana/payment-signing.js';
import type { MovementInput } from '../../domain/ledger/ledger-store.port.js';

// Signing lives in the Solana adapter, beside its blockhash cache; the write path and its callers
// (swaps, creator-fund batches, tests) keep reaching it through here.
export {
  resignPayment,
  signTransfer,
  signUsdcPayment,
  type SignedPayment,
  type UsdcPayment,
} from '../../adapters/solana/payment-signing.js';
export type { KeyedWrite } from '../../adapters/postgres/outbox-writer.js';

/** The signer of a user's custodial wallet (cached per keystore: unsealing costs ~1 ms of CPU). */
export async function walletSigner(db: Db, keystore: Keystore, accountId: string): Promise<Signer> {
  return cachedWalletSigner(keystore, accountId, () => sealedUserWallet(db, accountId));
}

/**
 * Puts a signed payment in the outbox together with its domain event (and, for a keyed write, its
 * resource on the key's row), inside the caller's transaction (the one that also wrote the ledger
 * movement `movementId` and the domain row), in one statement, and returns the outbox row id the
 * worker settles.
 */
export async function insertOutboxPayment(
  tx: Tx,
  movementId: string,
  payment: SignedPayment,
  event: DomainEventRow,
  idempotency?: KeyedWrite,
): Promise<string> {
  const { chainTransactionId } = await writeOutboxPayment(tx, {
    movement: { id: movementId },
    payment,
    event,
    idempotency,
  });
  return chainTransactionId;
}

export interface PaidWrite {
  movement: MovementInput;
  /** The domain row's INSERT with its RETURNING (insertPost, insertSend, insertSwap). */
  row: PaidRowInsert;
  payment: SignedPayment;
  event: DomainEventRow;
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
): Promise<{ chainTransactionId: string; row: Row; signed: SignedOutboxRow }> {
  const { chainTransactionId, movementId, row } = await writeOutboxPayment<Row>(db, write);
  const { wire, signature, lastValidBlockHeight } = write.payment;
  return { chainTransactionId, row, signed: { movementId, wire, signature, lastValidBlockHeight } };
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
  const row = await outboxRowOfMovement(db, movementId);
  return {
    chainTransactionId: row.id,
    swapTx: row.signature,
    failed: row.status === 'failed',
    debitMicro: BigInt(row.debit),
  };
}
