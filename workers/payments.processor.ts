import {
  PAYMENTS_QUEUE,
  paymentBackoffStrategy,
  type PaymentJob,
  type PaymentSignalPublisher,
} from '../src/adapters/redis/payments-queue.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import type { WritePathDeps } from '../src/app/write-path/write-path-deps.js';
import type { QueueProcessor } from './queue-workers.js';

/** The payments queue's processor, on the main event loop or in a thread of its own (payments.thread.ts). */
export function paymentsProcessor(
  deps: WritePathDeps & { signalPayment: PaymentSignalPublisher },
): QueueProcessor {
  return {
    queue: PAYMENTS_QUEUE,
    // Settling is mostly waiting on the chain (~0.5 s to confirmed on 400 ms slots), and one
    // shared watcher polls for all of them: hundreds in flight per worker process cost little.
    concurrency: 512,
    // Each paid write hands its payment over here while its client waits: with one fetch loop,
    // pickup took ~18 ms of a post's ~90 ms at 300 posts/s; four loops took ~10 ms.
    fetchers: 4,
    // The 'sent' signal is what the paying request waits for; 'done' wakes one whose payment
    // ended without it (failed on chain, or past 'sent' when this run began). The outbox row has
    // the outcome before either goes out.
    process: async (job) => {
      const jobId = job.id!;
      const status = await settlePayment(deps, (job.data as PaymentJob).chainTransactionId, {
        onSent: (signature) => deps.signalPayment(jobId, { kind: 'sent', signature }),
      });
      await deps.signalPayment(jobId, { kind: 'done' });
      return status;
    },
    // Retries wait 0.5 s doubling up to 60 s, never longer (paymentRetryDelayMs).
    backoffStrategy: paymentBackoffStrategy,
    // A worker killed mid-job holds the job's lock until it expires: short locks (renewed every
    // 5 s while alive) and a frequent stall check hand it to another worker within ~15 s.
    // Settling is idempotent, so a stalled job may safely run again, as often as crashes happen.
    lock: { lockDuration: 10_000, stalledInterval: 5_000, maxStalledCount: 1_000 },
    // No start-up resume: the worker role's outbox sweeper (workers/outbox-sweeper.loop.ts)
    // runs its first round at start and every few seconds after, in bounded batches.
  };
}
