import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';

/**
 * Job counts by state of a BullMQ queue this process may not otherwise hold (the metrics of a
 * process that only serves the API still show the creator-fund queue). Shares the given
 * connection: counting is plain commands, never a blocking read.
 */
export function queueJobCounter(
  connection: Redis,
  prefix: string,
  name: string,
): { counts(states: readonly string[]): Promise<Record<string, number>>; close(): Promise<void> } {
  const queue = new Queue(name, { connection, prefix });
  return {
    counts: (states) => queue.getJobCounts(...(states as Parameters<Queue['getJobCounts']>)),
    close: () => queue.close(),
  };
}
