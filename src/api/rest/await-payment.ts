import { AppError } from '../../domain/errors.js';
import type { ApiDeps } from '../api-deps.js';

export interface AwaitedPayment {
  /** `pending`: not confirmed within WRITE_TIMEOUT_MS; the worker goes on (answer 202). */
  settled: 'confirmed' | 'pending';
  /** The signature to show as `swap_tx`: a re-sign after blockhash expiry changes it. */
  swapTx: string;
}

/**
 * Hands one committed outbox row to the payments worker (the job id comes from the row, so this
 * is safe to repeat) and waits up to WRITE_TIMEOUT_MS for it to settle: the one step every paid
 * route (posts, reposts) shares.
 */
export async function awaitPayment(deps: ApiDeps, chainTransactionId: string): Promise<AwaitedPayment> {
  const job = await deps.payments.enqueue(chainTransactionId);
  let settled: 'confirmed' | 'failed' | 'pending' = 'pending';
  try {
    settled = (await job.waitUntilFinished(deps.payments.events, deps.writeTimeoutMs)) as
      'confirmed' | 'failed';
  } catch (error) {
    // Past the timeout the payment goes on in the worker; anything else is a real failure.
    if (!/timed out/i.test((error as Error).message)) throw error;
  }
  if (settled === 'failed') {
    throw new AppError('unavailable', 'The payment failed on chain and was refunded; try again');
  }
  const row = await deps.db
    .selectFrom('chain_transactions')
    .select('signature')
    .where('id', '=', chainTransactionId)
    .executeTakeFirstOrThrow();
  return { settled, swapTx: row.signature };
}
