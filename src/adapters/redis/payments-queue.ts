import { Queue, QueueEvents, type Job } from 'bullmq';
import { createRedis } from './redis.js';

export const PAYMENTS_QUEUE = 'payments';

export interface PaymentJob {
  chainTransactionId: string;
}

export interface PaymentsQueue {
  queue: Queue<PaymentJob>;
  events: QueueEvents;
  /**
   * Enqueues the settlement of one outbox row. The job id is derived from the row, so enqueueing
   * twice (an API retry, the worker's start-up sweep) runs it once.
   */
  enqueue(chainTransactionId: string): Promise<Job<PaymentJob>>;
  close(): Promise<void>;
}

export function createPaymentsQueue(redisUrl: string, prefix: string): PaymentsQueue {
  const connection = createRedis(redisUrl, 'client');
  const eventsConnection = createRedis(redisUrl, 'worker');
  const queue = new Queue<PaymentJob>(PAYMENTS_QUEUE, { connection, prefix });
  const events = new QueueEvents(PAYMENTS_QUEUE, { connection: eventsConnection, prefix });
  // Every request waiting for its payment listens here for a moment: hundreds at once is normal.
  events.setMaxListeners(0);
  return {
    queue,
    events,
    enqueue: (chainTransactionId) =>
      queue.add(
        'settle',
        { chainTransactionId },
        {
          jobId: `pay-${chainTransactionId}`,
          // Retryable chain failures (RPC down, timeouts) back off up to ~minutes, then keep trying.
          attempts: 30,
          backoff: { type: 'exponential', delay: 500 },
          removeOnComplete: { age: 24 * 3600 },
          removeOnFail: { age: 7 * 24 * 3600 },
        },
      ),
    close: async () => {
      await events.close();
      await queue.close();
      connection.disconnect();
      eventsConnection.disconnect();
    },
  };
}
