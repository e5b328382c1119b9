import type { RawBuilder } from 'kysely';
import type { Db } from './db.js';

/** Account `accountId`'s handle. Throws when absent. */
export async function accountHandle(db: Db, accountId: string): Promise<string> {
  const row = await db
    .selectFrom('accounts')
    .select(['handle'])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
  return row.handle;
}

/** The account called @`handle`, with its custodial wallet address, if any. */
export async function accountByHandle(db: Db, handle: string) {
  return db
    .selectFrom('accounts')
    .select(['id', 'handle', 'wallet_address'])
    .where('handle', '=', handle)
    .executeTakeFirst();
}

/**
 * The sends row's INSERT ... RETURNING created_at, for commitPaidWrite's one statement:
 * `movementId` is the SQL expression of the movement that statement records.
 */
export function insertSend(
  db: Db,
  send: { id: string; senderId: string; recipientId: string; amountMicro: bigint; memo: string | null },
  movementId: RawBuilder<string>,
) {
  return db
    .insertInto('sends')
    .values({
      id: send.id,
      sender_id: send.senderId,
      recipient_id: send.recipientId,
      amount_micro: send.amountMicro,
      memo: send.memo,
      movement_id: movementId,
    })
    .returning('created_at');
}

/** Send `sendId` as committed, with both handles and its movement. Throws when absent. */
export async function committedSendRow(db: Db, sendId: string) {
  return db
    .selectFrom('sends')
    .innerJoin('accounts as sender', 'sender.id', 'sends.sender_id')
    .innerJoin('accounts as recipient', 'recipient.id', 'sends.recipient_id')
    .select([
      'sends.id',
      'sends.amount_micro',
      'sends.memo',
      'sends.created_at',
      'sends.movement_id',
      'sender.handle as fromHandle',
      'recipient.handle as toHandle',
    ])
    .where('sends.id', '=', sendId)
    .executeTakeFirstOrThrow();
}
