import { Queue, QueueEvents, type Job } from 'bullmq';
import { createRedis } from './redis.js';

export const PAYMENTS_QUEUE = 'payments';

export interface PaymentJob {
  chainTransactionId: string;
}

/**
 * What a waiting request hears about a payment job: the cluster executed it (with the signature
 * that landed), the job finished (the outbox row says how), or the job already existed when it was
 * enqueued (its events may be past: the outbox row says where it is).
 */
export type PaymentSignal =
  { kind: 'sent'; signature: string } | { kind: 'done' } | { kind: 'duplicated' } | { kind: 'timeout' };

/** The progress a payments job reports once the cluster executed its transaction. */
export interface SentProgress {
  stage: 'sent';
  signature: string;
}

export interface PaymentWait {
  readonly signal: Promise<PaymentSignal>;
  /** Stops waiting (the caller learnt the outcome elsewhere). */
  cancel(): void;
}

export interface PaymentsQueue {
  queue: Queue<PaymentJob>;
  /**
   * Enqueues the settlement of one outbox row. The job id is derived from the row, so enqueueing
   * twice (an API retry, the worker's start-up sweep) runs it once.
   */
  enqueue(chainTransactionId: string): Promise<Job<PaymentJob>>;
  /** The job id enqueue() gives the settlement of this outbox row. */
  jobIdOf(chainTransactionId: string): string;
  /**
   * Starts listening for the job's progress ('sent') or completion, for at most `timeoutMs`. It
   * listens from the moment it is called: a caller checks the stored state after calling it, so
   * a signal sent just before is never missed.
   */
  waitFor(jobId: string, timeoutMs: number): PaymentWait;
  close(): Promise<void>;
}

export function createPaymentsQueue(redisUrl: string, prefix: string): PaymentsQueue {
  const connection = createRedis(redisUrl, 'client');
  const eventsConnection = createRedis(redisUrl, 'worker');
  const queue = new Queue<PaymentJob>(PAYMENTS_QUEUE, { connection, prefix });
  const events = new QueueEvents(PAYMENTS_QUEUE, { connection: eventsConnection, prefix });
  // One listener per event kind dispatching by job id: hundreds of requests wait at once, and a
  // listener each would make every event walk all of them.
  const waiters = new Map<string, Set<(signal: PaymentSignal) => void>>();
  const notify = (jobId: string, signal: PaymentSignal) => {
    for (const wake of waiters.get(jobId) ?? []) wake(signal);
  };
  events.on('progress', ({ jobId, data }) => {
    const progress = data as Partial<SentProgress> | null;
    if (progress?.stage === 'sent' && typeof progress.signature === 'string') {
      notify(jobId, { kind: 'sent', signature: progress.signature });
    }
  });
  events.on('completed', ({ jobId }) => notify(jobId, { kind: 'done' }));
  events.on('duplicated', ({ jobId }) => notify(jobId, { kind: 'duplicated' }));
  const jobIdOf = (chainTransactionId: string) => `pay-${chainTransactionId}`;

  return {
    queue,
    jobIdOf,
    enqueue: (chainTransactionId) =>
      queue.add(
        'settle',
        { chainTransactionId },
        {
          jobId: jobIdOf(chainTransactionId),
          // Retryable chain failures (RPC down, timeouts) back off up to ~minutes, then keep trying.
          attempts: 30,
          backoff: { type: 'exponential', delay: 500 },
          removeOnComplete: { age: 24 * 3600 },
          removeOnFail: { age: 7 * 24 * 3600 },
        },
      ),
    waitFor: (jobId, timeoutMs) => {
      let wake!: (signal: PaymentSignal) => void;
      const signal = new Promise<PaymentSignal>((resolve) => (wake = resolve));
      const listeners = waiters.get(jobId) ?? new Set();
      waiters.set(jobId, listeners);
      const stop = () => {
        clearTimeout(timer);
        listeners.delete(onSignal);
        if (listeners.size === 0 && waiters.get(jobId) === listeners) waiters.delete(jobId);
      };
      const onSignal = (s: PaymentSignal) => {
        stop();
        wake(s);
      };
      const timer = setTimeout(() => onSignal({ kind: 'timeout' }), timeoutMs);
      listeners.add(onSignal);
      return {
        signal,
        cancel: () => {
          stop();
          wake({ kind: 'timeout' });
        },
      };
    },
    close: async () => {
      await events.close();
      await queue.close();
      connection.disconnect();
      eventsConnection.disconnect();
    },
  };
}
