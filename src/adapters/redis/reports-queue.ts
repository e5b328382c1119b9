import { Queue } from 'bullmq';
import { createRedis } from './redis.js';

export const REPORTS_QUEUE = 'reports';

/** Tries of a run's job: the first and up to 3 retries of a retryable failure (ClickHouse down). */
export const REPORT_JOB_ATTEMPTS = 4;
/** First retry delay; BullMQ's exponential backoff doubles it (1 s, 2 s, 4 s). */
export const REPORT_RETRY_BASE_MS = 1_000;

/** What resubmit did: added a job (there was none), revived one that blocked the id, or left it. */
export type ReportResubmitted = 'added' | 'revived' | 'queued';

/** The reports queue as the API and the worker's resume sweep see it. Job id = run id. */
export interface ReportsQueue {
  queue: Queue<{ runId: string }>;
  /** Queues the run (a second call for the same run is the same job). */
  enqueue(runId: string): Promise<void>;
  /**
   * Makes sure an unfinished run has a live job: adds one when there is none, and replaces a
   * finished or failed job that would block the id. A waiting, delayed or active job is left.
   */
  resubmit(runId: string): Promise<ReportResubmitted>;
  close(): Promise<void>;
}

export function createReportsQueue(redisUrl: string, prefix: string): ReportsQueue {
  const connection = createRedis(redisUrl, 'client');
  const queue = new Queue<{ runId: string }>(REPORTS_QUEUE, { connection, prefix });
  const enqueue = async (runId: string) => {
    await queue.add(
      'run',
      { runId },
      {
        jobId: runId,
        attempts: REPORT_JOB_ATTEMPTS,
        backoff: { type: 'exponential', delay: REPORT_RETRY_BASE_MS },
        removeOnComplete: { age: 24 * 3600 },
        removeOnFail: { age: 24 * 3600 },
      },
    );
  };
  return {
    queue,
    enqueue,
    resubmit: async (runId) => {
      const job = await queue.getJob(runId);
      if (!job) {
        await enqueue(runId);
        return 'added';
      }
      const state = await job.getState();
      if (state !== 'failed' && state !== 'completed' && state !== 'unknown') return 'queued';
      // remove() refuses a job another worker has just taken (locked): then it is live anyway.
      await job.remove().catch(() => undefined);
      await enqueue(runId);
      return 'revived';
    },
    close: async () => {
      await queue.close();
      connection.disconnect();
    },
  };
}
