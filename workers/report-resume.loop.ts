import { startLoop, type BackgroundLoop } from '../src/app/background-loop.js';
import { resumeReportRuns } from '../src/app/reports/run-report.js';
import type { App } from '../src/app/wiring.js';

/** Pause between two sweeps of unfinished report runs. */
export const REPORT_RESUME_MS = 30_000;

/**
 * Every REPORT_RESUME_MS, hands report runs that lost their job (a request whose enqueue failed, a
 * job that failed while its run stayed live, a worker killed past BullMQ's stall limit) back to the
 * `reports` queue. The worker's start runs the same sweep (reportsProcessor's resume).
 */
export function startReportResume(app: App): BackgroundLoop {
  const log = app.logger.child({ role: 'worker', loop: 'report-resume' });
  let first = true;
  return startLoop({
    name: 'report resume',
    log,
    idleMs: REPORT_RESUME_MS,
    step: async () => {
      // The first round is the start's own (resume): wait one period before sweeping again.
      if (first) {
        first = false;
        return false;
      }
      const queued = await resumeReportRuns(app);
      if (queued > 0) log.info(`report resume: handed ${queued} unfinished report run(s) back to the queue`);
      return false;
    },
  });
}
