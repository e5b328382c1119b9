import type { Job } from 'bullmq';
import { REPORTS_QUEUE } from '../src/adapters/redis/reports-queue.js';
import { resumeReportRuns, runReportAttempt } from '../src/app/reports/run-report.js';
import type { App } from '../src/app/wiring.js';
import type { QueueProcessor } from './queue-workers.js';

/**
 * The `reports` queue: one job per run (job id = run id), made by runReportAttempt. Two at a time
 * per process: a run streams from ClickHouse to disk and holds little memory, but each holds a
 * ClickHouse query. A job whose worker died is picked up again by BullMQ's stalled-job check once
 * its lock (15 s) runs out, or by the resume sweep (start, then workers/report-resume.loop.ts).
 */
export function reportsProcessor(app: App): QueueProcessor {
  return {
    queue: REPORTS_QUEUE,
    concurrency: 2,
    lock: { lockDuration: 15_000, stalledInterval: 5_000, maxStalledCount: 3 },
    process: async (job: Job<{ runId: string }>, _token?: string, signal?: AbortSignal) => {
      const finalTry = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      return runReportAttempt(app, job.data.runId, { finalTry, ...(signal ? { signal } : {}) });
    },
    resume: () => resumeReportRuns(app),
  };
}
