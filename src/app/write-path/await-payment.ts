import type { PaymentsQueue } from '../../adapters/redis/payments-queue.js';
import { AppError } from '../../domain/errors.js';
import type { WritePathDeps } from './create-post.js';

export interface AwaitPaymentDeps extends WritePathDeps {
  payments: PaymentsQueue;
  /** WRITE_TIMEOUT_MS: how long a paid write waits for the cluster before answering 202. */
  writeTimeoutMs: number;
}

export interface AwaitedPayment {
  /**
   * `sent`: the cluster executed the transaction (commitment processed), the worker follows it to
   * confirmed; `confirmed`/`finalized`: already there; `pending`: none of that within
   * WRITE_TIMEOUT_MS, the worker goes on (answer 202).
   */
  settled: 'sent' | 'confirmed' | 'finalized' | 'pending';
  /** The signature to show as `swap_tx`: a re-sign after blockhash expiry changes it. */
  swapTx: string;
}

/**
 * Hands one committed outbox row to the payments worker (the job id comes from the row, so this is
 * safe to repeat) and waits up to WRITE_TIMEOUT_MS for the cluster to execute it: the one step
 * every paid write (post, repost, send; REST and GraphQL) shares. The row is the truth; the job's
 * events only say when to look at it again.
 *
 * The wait starts before the job is added, so a new job's events cannot be missed and the row
 * needs no read on the common path. A job that already existed (a retry) may be past its events:
 * then the row is read, under a second wait started before the read.
 */
export async function awaitPayment(
  deps: AwaitPaymentDeps,
  chainTransactionId: string,
): Promise<AwaitedPayment> {
  const jobId = deps.payments.jobIdOf(chainTransactionId);
  let wait = deps.payments.waitFor(jobId, deps.writeTimeoutMs);
  await deps.payments.enqueue(chainTransactionId).catch((error: unknown) => {
    wait.cancel();
    throw error;
  });
  let signal = await wait.signal;
  if (signal.kind === 'duplicated') {
    wait = deps.payments.waitFor(jobId, deps.writeTimeoutMs);
    const stored = await outboxRow(deps, chainTransactionId);
    if (stored.status === 'signed') signal = await wait.signal;
    else wait.cancel();
  }
  // 'sent' carries what a read would find; anything else: the row says how it ended.
  const row =
    signal.kind === 'sent'
      ? { status: 'sent' as const, signature: signal.signature }
      : await outboxRow(deps, chainTransactionId);
  if (row.status === 'failed') {
    throw new AppError('unavailable', 'The payment failed on chain and was refunded; try again');
  }
  return { settled: row.status === 'signed' ? 'pending' : row.status, swapTx: row.signature };
}

function outboxRow(deps: WritePathDeps, chainTransactionId: string) {
  return deps.db
    .selectFrom('chain_transactions')
    .select(['status', 'signature'])
    .where('id', '=', chainTransactionId)
    .executeTakeFirstOrThrow();
}
