import type { App } from '../src/app/wiring.js';
import { startLoop, type BackgroundLoop } from '../src/app/background-loop.js';
import { sweepOutbox, type SweepCursor } from '../src/app/write-path/outbox-sweep.js';

/** Pause between two sweeps that found no backlog. */
export const OUTBOX_SWEEP_MS = 2_000;

/**
 * The outbox sweeper of the worker role: every OUTBOX_SWEEP_MS hands unfinished outbox rows back
 * to the payments queue (sweepOutbox). Before it, rows were only swept when a worker started, so a
 * payment whose request failed to enqueue it (Redis blip) sat in `signed` until some restart.
 * Its first round runs at once, which also resumes what a crash left unfinished.
 */
export function startOutboxSweeper(app: App): BackgroundLoop {
  const log = app.logger.child({ role: 'worker', loop: 'outbox-sweeper' });
  let cursor: SweepCursor | null = null;
  return startLoop({
    name: 'outbox sweeper',
    log,
    idleMs: OUTBOX_SWEEP_MS,
    step: async () => {
      const swept = await sweepOutbox(app, cursor);
      cursor = swept.next;
      if (swept.resubmitted > 0) {
        log.info(`outbox sweeper: handed ${swept.resubmitted} unfinished payment(s) back to the queue`);
      }
      // A full batch that needed work is a backlog (a restart after an outage): go on at once.
      // A full batch of rows already queued is not: the next round looks at the next batch.
      return swept.next !== null && swept.resubmitted > 0;
    },
  });
}
