import { movementLegs, recordMovement } from '../../adapters/postgres/ledger.repository.js';
import { ChainError, sendAndConfirm } from '../../adapters/solana/index.js';
import { reversalLegs } from '../../domain/ledger/ledger.js';
import { resignPayment, walletSigner } from './payment-transaction.js';
import type { WritePathDeps } from './create-post.js';

export type SettlementStatus = 'confirmed' | 'failed';

/** Re-signs allowed after expiries before the job gives up and retries later. */
const MAX_RESIGNS_PER_RUN = 5;

/**
 * Drives one outbox row to its end: send the stored bytes and wait for 'confirmed' (re-sending the
 * same bytes while the blockhash lives: the chain dedupes), re-sign under a new blockhash when the
 * old one expired with nothing landed (`swap_tx` moves to the new signature), and reverse the
 * ledger legs when the transaction fails on chain. Retryable failures (RPC down, timeouts) are
 * thrown for the queue to retry; every step is safe to repeat after a crash.
 */
export async function settlePayment(
  deps: WritePathDeps,
  chainTransactionId: string,
): Promise<SettlementStatus> {
  for (let resigns = 0; ; resigns++) {
    const row = await deps.db
      .selectFrom('chain_transactions')
      .selectAll()
      .where('id', '=', chainTransactionId)
      .executeTakeFirstOrThrow();
    if (row.status !== 'signed') return row.status;
    try {
      const confirmed = await sendAndConfirm(
        deps.rpc,
        {
          wire: row.wire,
          signature: row.signature,
          lastValidBlockHeight: Number(row.last_valid_block_height),
        },
        { commitment: 'confirmed' },
      );
      await deps.db
        .updateTable('chain_transactions')
        .set({ status: 'confirmed', slot: BigInt(confirmed.slot), updated_at: new Date() })
        .where('id', '=', row.id)
        .where('status', '=', 'signed')
        .execute();
      return 'confirmed';
    } catch (error) {
      if (!(error instanceof ChainError)) throw error;
      if (error.kind === 'blockhash_expired' && resigns < MAX_RESIGNS_PER_RUN) {
        await resign(deps, row.id, row.movement_id, row.signature, row.wire);
        continue;
      }
      if (error.kind === 'program_error' || error.kind === 'invalid_transaction') {
        await reverse(deps, row.id, row.movement_id, {
          kind: error.kind,
          message: error.message,
          err: error.err ?? null,
        });
        return 'failed';
      }
      throw error;
    }
  }
}

async function resign(
  deps: WritePathDeps,
  rowId: string,
  movementId: string,
  oldSignature: string,
  wire: Buffer,
) {
  const platform = await deps.bootstrapChain();
  const payer = (await movementLegs(deps.db, movementId)).find(
    (leg) => leg.amountMicro < 0n && leg.account.kind === 'user',
  );
  if (!payer || payer.account.kind !== 'user') throw new Error(`movement ${movementId} has no paying user`);
  const signer = await walletSigner(deps.db, deps.keystore, payer.account.accountId);
  const fresh = await resignPayment(deps.rpc, wire, [platform.signers.fee_payer, signer]);
  // Guarded by the old signature: two workers racing re-sign once.
  await deps.db
    .updateTable('chain_transactions')
    .set((eb) => ({
      signature: fresh.signature,
      wire: fresh.wire,
      blockhash: fresh.blockhash,
      last_valid_block_height: BigInt(fresh.lastValidBlockHeight),
      attempts: eb('attempts', '+', 1),
      updated_at: new Date(),
    }))
    .where('id', '=', rowId)
    .where('signature', '=', oldSignature)
    .execute();
}

async function reverse(
  deps: WritePathDeps,
  rowId: string,
  movementId: string,
  failure: Record<string, unknown>,
) {
  await deps.db.transaction().execute(async (trx) => {
    const marked = await trx
      .updateTable('chain_transactions')
      .set({ status: 'failed', error: JSON.stringify(failure), updated_at: new Date() })
      .where('id', '=', rowId)
      .where('status', '=', 'signed')
      .executeTakeFirst();
    if (marked.numUpdatedRows === 0n) return; // another worker settled it
    const legs = await movementLegs(trx, movementId);
    await recordMovement(trx, {
      kind: 'reversal',
      legs: reversalLegs(legs),
      reverses: movementId,
      idempotencyKey: `reversal:${movementId}`,
    });
  });
}
