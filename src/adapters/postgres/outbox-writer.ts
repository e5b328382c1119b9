import { sql, type Insertable, type OperationNodeSource, type RawBuilder } from 'kysely';
import type { MovementInput } from '../../domain/ledger/ledger-store.port.js';
import type { DomainEventsTable } from './database.js';
import type { Db } from './db.js';
import {
  recordResourceCall,
  takenOverRefusal,
  type KeyOwner,
  type RecordedResource,
} from './idempotency.repository.js';
import { ledgerRefusal, movementCall } from './ledger.repository.js';
import type { Tx } from './tx.js';

/**
 * A paid write's domain row (post, repost, send, swap): its INSERT with its RETURNING, given the
 * id of the movement the same statement records, as SQL (insertPost, insertSend, insertSwap).
 */
export type PaidRowInsert = (movementId: RawBuilder<string>) => OperationNodeSource;

/** The domain event a money move commits with (shipped to analytics and the account event log). */
export type DomainEventRow = Insertable<DomainEventsTable>;

/** A signed Solana transaction, as the outbox keeps it for the payments worker to send. */
export interface OutboxPayment {
  wire: Buffer;
  signature: string;
  blockhash: string;
  lastValidBlockHeight: number;
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

export interface OutboxWrite {
  /**
   * The movement the payment pays: its input, recorded by this same statement (a paid write), or
   * the id of one the caller's open transaction already recorded (a creator-fund batch).
   */
  movement: MovementInput | { id: string };
  /** The domain row, written by the same statement; its RETURNING is what comes back as `row`. */
  row?: PaidRowInsert | undefined;
  payment: OutboxPayment;
  event: DomainEventRow;
  /** Set when the write runs under an Idempotency-Key: its resource is recorded on the key's row. */
  idempotency?: KeyedWrite | undefined;
}

/**
 * The one writer of the outbox: puts a signed payment in `chain_transactions` with its domain
 * event, in one statement that also records the movement and writes the domain row when given
 * them, and, for a keyed write, records its resource on the key's row. One statement is one
 * transaction (or part of `db`'s when it is an open Tx): all of it commits or none does, in one
 * round trip that holds a pooled connection (and the payer's balance row lock) only while
 * Postgres works. Returns the outbox row id the worker settles and what the row's INSERT returned.
 *
 * A refused debit throws the 402 AppError (ledgerRefusal); a write whose key a retry took over
 * (its lease ran out) commits nothing and throws the 409 (takenOverRefusal).
 */
export async function writeOutboxPayment<Row = Record<string, never>>(
  db: Db | Tx,
  write: OutboxWrite,
): Promise<{ chainTransactionId: string; movementId: string; row: Row }> {
  // Every part reads the id from the materialized CTE: the function runs exactly once.
  const movementId =
    'id' in write.movement
      ? sql<string>`${write.movement.id}::uuid`
      : sql<string>`(SELECT movement_id FROM movement)`;
  const movement =
    'id' in write.movement
      ? sql``
      : sql`movement AS MATERIALIZED (SELECT movement_id FROM ${movementCall(write.movement)}),`;
  const domainRow = write.row ? sql`domain_row AS (${write.row(movementId)}),` : sql``;
  const keyed = write.idempotency;
  // Selected by the final SELECT, which is what runs it (an unreferenced SELECT CTE is skipped).
  const recorded = keyed
    ? sql`, recorded AS MATERIALIZED (SELECT ${recordResourceCall(keyed.claim, keyed.resource)} AS resource_id)`
    : sql``;
  const recordedColumn = keyed ? sql`, (SELECT resource_id FROM recorded) AS idempotency_resource_id` : sql``;
  const selected = write.row ? sql`domain_row.*, ` : sql``;
  const from = write.row ? sql` FROM domain_row` : sql``;
  try {
    const { rows } = await sql<
      Row & { chain_transaction_id: string; outbox_movement_id: string; idempotency_resource_id?: string }
    >`
      WITH ${movement} ${domainRow}
           event AS (${db.insertInto('domain_events').values(write.event)}),
           outbox AS (${db.insertInto('chain_transactions').values(outboxRow(movementId, write.payment)).returning(['id', 'movement_id'])})${recorded}
      SELECT ${selected}(SELECT id FROM outbox) AS chain_transaction_id,
             (SELECT movement_id FROM outbox) AS outbox_movement_id${recordedColumn}${from}`.execute(db);
    const {
      chain_transaction_id: chainTransactionId,
      outbox_movement_id: outboxMovementId,
      idempotency_resource_id: _recorded,
      ...row
    } = rows[0]!;
    return { chainTransactionId, movementId: outboxMovementId, row: row as Row };
  } catch (error) {
    throw ledgerRefusal(error) ?? takenOverRefusal(error) ?? error;
  }
}

/** The outbox row of a signed payment, paying for the movement `movementId` (SQL). */
function outboxRow(movementId: RawBuilder<string>, payment: OutboxPayment) {
  return {
    movement_id: movementId,
    signature: payment.signature,
    wire: payment.wire,
    blockhash: payment.blockhash,
    last_valid_block_height: BigInt(payment.lastValidBlockHeight),
  };
}
