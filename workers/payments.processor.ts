import {
  carriedRowsOf,
  PAYMENTS_QUEUE,
  paymentBackoffStrategy,
  paymentIdsOf,
  paymentJobIdOf,
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
    // One fetch loop: the paying requests' hand-offs arrive gathered (PAYMENT_HANDOFF_MS), a few
    // jobs a second however many posts; each further loop costs Redis round trips per job.
    fetchers: 1,
    // A job's rows settle together: their reads, sends and updates of one step leave as one
    // statement or request each (outbox-writes.ts, the watcher's batched sends). One row failing
    // for a retryable reason fails the job after the others have settled; its retry finds those
    // finished at once (settling is idempotent).
    //
    // The 'sent' signal (keyed by the row's own job id, whichever job carries it) is what the
    // paying request waits for; 'done' wakes one whose payment ended without it (failed on chain,
    // or past 'sent' when this run began). The outbox row has the outcome before either goes out.
    process: async (job) => {
      const data = job.data as PaymentJob;
      const ids = paymentIdsOf(data);
      // The rows as the paying requests committed them, for this first run only (a retry reads).
      const carried = carriedRowsOf(data, job.attemptsMade);
      const settled = await Promise.allSettled(
        ids.map(async (id) => {
          const signalId = paymentJobIdOf(id);
          let signalled = false;
          const status = await settlePayment(deps, id, {
            signed: carried.get(id),
            onSent: (signature) => {
              signalled = true;
              return deps.signalPayment(signalId, { kind: 'sent', signature }, data.origin);
            },
          });
          if (!signalled) await deps.signalPayment(signalId, { kind: 'done' }, data.origin);
          return status;
        }),
      );
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
      const outcomes: Record<string, number> = {};
      for (const s of settled as PromiseFulfilledResult<string>[])
        outcomes[s.value] = (outcomes[s.value] ?? 0) + 1;
      return ids.length === 1 ? Object.keys(outcomes)[0] : outcomes;
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
