import { Queue } from 'bullmq';
import { createRedis } from './redis.js';

export const CREATOR_FUND_QUEUE = 'creator-fund';
const SCHEDULER_ID = 'creator-fund-epochs';

/**
 * Registers (or updates) the repeatable job that pays creator-fund epochs: one job every
 * `everyMs`, on BullMQ's job scheduler, so however many worker processes start, one schedule
 * exists and each tick runs once. A tick whose epoch is not ready yet (events still shipping)
 * fails and is retried every few seconds; epochs already paid are skipped by the job itself.
 */
export async function scheduleCreatorFundEpochs(
  redisUrl: string,
  prefix: string,
  everyMs: number,
): Promise<void> {
  const connection = createRedis(redisUrl, 'client');
  const queue = new Queue(CREATOR_FUND_QUEUE, { connection, prefix });
  try {
    await queue.upsertJobScheduler(
      SCHEDULER_ID,
      { every: everyMs },
      {
        name: 'run-due-epochs',
        data: {},
        opts: {
          attempts: 60,
          backoff: { type: 'fixed', delay: 5_000 },
          removeOnComplete: { count: 200 },
          removeOnFail: { count: 200 },
        },
      },
    );
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

/** Removes the schedule (creator fund switched off): ticks already queued still run. */
export async function unscheduleCreatorFundEpochs(redisUrl: string, prefix: string): Promise<void> {
  const connection = createRedis(redisUrl, 'client');
  const queue = new Queue(CREATOR_FUND_QUEUE, { connection, prefix });
  try {
    await queue.removeJobScheduler(SCHEDULER_ID);
  } finally {
    await queue.close();
    connection.disconnect();
  }
}
