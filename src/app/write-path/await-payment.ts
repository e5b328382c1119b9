import type { Logger } from 'pino';
import { outboxStatus } from '../../adapters/postgres/outbox-reads.repository.js';
import type { PaymentsQueue, SignedOutboxRow } from '../../adapters/redis/payments-queue.js';
import { AppError } from '../../domain/errors.js';
import type { WritePathDeps } from './write-path-deps.js';

export interface AwaitPaymentDeps extends WritePathDeps {
  payments: PaymentsQueue;
  /** WRITE_TIMEOUT_MS: how long a paid write waits for the cluster before answering 202. */
  writeTimeoutMs: number;
  logger: Logger;
}

/** A money move whose outbox row has committed: from here on it settles, whatever happens. */
export interface CommittedPayment {
  chainTransactionId: string;
  /** The signature committed with the row: the `swap_tx` a 202 shows when nothing newer is known. */
  swapTx: string;
  /** The row as the commit wrote it, when this request committed it: handed off with it. */
  signed?: SignedOutboxRow | undefined;
}

export interface AwaitedPayment {
  /**
   * `sent`: the cluster executed the transaction (commitment processed), the worker follows it to
   * confirmed; `confirmed`/`finalized`: already there; `pending`: none of that within
   * WRITE_TIMEOUT_MS, or following it failed (Redis or Postgres down): the worker (or the outbox
   * sweeper) goes on (answer 202).
   */
  settled: 'sent' | 'confirmed' | 'finalized' | 'pending';
  /** The signature to show as `swap_tx`: a re-sign after blockhash expiry changes it. */
  swapTx: string;
}

/**
 * Beyond WRITE_TIMEOUT_MS, how long following a payment may take before the request answers 202
 * anyway: enqueueing on a Redis that accepts connections but never answers would otherwise hang
 * the request (BullMQ waits for a connection to become ready without a deadline).
 */
export const FOLLOW_GRACE_MS = 2_000;

/**
 * Hands one committed outbox row to the payments worker (with the other hand-offs of its
 * PAYMENT_HANDOFF_MS gathering; settling is idempotent, so this is safe to repeat) and waits up to
 * WRITE_TIMEOUT_MS for the cluster to execute it: the one step
 * every paid write (post, repost, send, swap; REST and GraphQL) shares. The row is the truth; the
 * job's events only say when to look at it again.
 *
 * The money has moved when this is called, so it never fails for an infrastructure reason: if the
 * hand-off, the wait or the row read fails (or hangs past WRITE_TIMEOUT_MS + FOLLOW_GRACE_MS) the
 * answer is `pending` with the committed signature, and the outbox sweeper hands the row to the
 * queue within seconds. An error here would be a 5xx, which frees the Idempotency-Key, and the
 * client's retry would pay a second time. The one error left is a payment that failed on chain
 * and was refunded: nothing was charged, so the client may retry.
 *
 * The wait listens before the job is added, so a new job's signal cannot be missed and the row
 * needs no read on the common path. A job that already existed (a retry) may be past its signals,
 * and pub/sub may drop one: with no signal after RECHECK_AFTER_MS the row is read.
 */
export async function awaitPayment(
  deps: AwaitPaymentDeps,
  payment: CommittedPayment,
): Promise<AwaitedPayment> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), deps.writeTimeoutMs + FOLLOW_GRACE_MS);
  });
  const followed = follow(deps, payment.chainTransactionId, payment.signed);
  let row: Awaited<typeof followed> | 'deadline';
  try {
    row = await Promise.race([followed, deadline]);
  } catch (error) {
    deps.logger.warn(
      { err: error, chainTransactionId: payment.chainTransactionId },
      'payment committed but not followed (answered pending); the outbox sweeper hands it to the worker',
    );
    return { settled: 'pending', swapTx: payment.swapTx };
  } finally {
    clearTimeout(timer);
  }
  if (row === 'deadline') {
    followed.catch(() => {}); // still running against a hung Redis or Postgres: nobody waits for it
    deps.logger.warn(
      { chainTransactionId: payment.chainTransactionId },
      'payment committed but following it hung (answered pending); the outbox sweeper hands it to the worker',
    );
    return { settled: 'pending', swapTx: payment.swapTx };
  }
  if (row.status === 'failed') {
    throw new AppError('unavailable', 'The payment failed on chain and was refunded; try again');
  }
  return { settled: row.status === 'signed' ? 'pending' : row.status, swapTx: row.signature };
}

/** A paid write (post, repost, send) and how far its payment had got when the wait ended. */
export type Paid<T> = T & {
  /** `pending`: not executed within WRITE_TIMEOUT_MS; the worker goes on (answer 202). */
  settled: AwaitedPayment['settled'];
  /** The landed signature: a re-sign after a blockhash expiry changes it. */
  landedSwapTx: string;
};

/** awaitPayment for a write just committed, answered as the write with its payment's state. */
export async function awaitPaid<T extends CommittedPayment>(
  deps: AwaitPaymentDeps,
  committed: T,
): Promise<Paid<T>> {
  const { settled, swapTx } = await awaitPayment(deps, committed);
  return { ...committed, settled, landedSwapTx: swapTx };
}

/**
 * With no signal this long after the enqueue, the row is read (and again at twice the pause, and
 * so on, until the wait ends): a job that existed before the enqueue (a retry, a sweep) may be past
 * its signals, and pub/sub drops what a reconnecting subscriber misses. On the localnet a payment
 * signals within tens of milliseconds, so these reads are for the rare payment that needs them.
 */
export const RECHECK_AFTER_MS = 250;

/** Hands the row to the workers, waits for its signal, and says where the row is. */
async function follow(deps: AwaitPaymentDeps, chainTransactionId: string, signed?: SignedOutboxRow) {
  const jobId = deps.payments.jobIdOf(chainTransactionId);
  const wait = deps.payments.waitFor(jobId, deps.writeTimeoutMs);
  try {
    // Listening before the hand-off: a new job's signals cannot be missed.
    await wait.listening;
    await deps.payments.handOff(chainTransactionId, signed);
    for (let pause = RECHECK_AFTER_MS; ; pause *= 2) {
      let timer: NodeJS.Timeout | undefined;
      const recheck = new Promise<'recheck'>((resolve) => (timer = setTimeout(resolve, pause, 'recheck')));
      const signal = await Promise.race([wait.signal, recheck]).finally(() => clearTimeout(timer));
      if (signal === 'recheck') {
        const stored = await outboxStatus(deps.db, chainTransactionId);
        if (stored.status === 'signed') continue;
        return stored;
      }
      // 'sent' carries what a read would find; 'done' or the end of the wait: the row says.
      return signal.kind === 'sent'
        ? { status: 'sent' as const, signature: signal.signature }
        : await outboxStatus(deps.db, chainTransactionId);
    }
  } finally {
    wait.cancel(); // stops listening; a no-op once the signal came
  }
}
