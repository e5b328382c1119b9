import type { App } from '../src/app/wiring.js';
import { startLoop, type BackgroundLoop } from '../src/app/background-loop.js';
import { FINALITY_BATCH, followFinality } from '../src/app/write-path/finality-follow.js';

/** Pause between two rounds that found nothing more to do. */
export const FINALITY_FOLLOW_MS = 2_000;

/**
 * The finality follower of the worker role (followFinality): every FINALITY_FOLLOW_MS it marks
 * confirmed payments and deposits the chain reports finalized, and sends again the payments the
 * chain lost after confirming them. Several workers may run it at once: every statement is guarded by the row's
 * status and signature, and the payments queue dedupes by row id.
 */
export function startFinalityFollower(app: App): BackgroundLoop {
  const log = app.logger.child({ role: 'worker', loop: 'finality-follower' });
  let missing = new Set<string>();
  return startLoop({
    name: 'finality follower',
    log,
    idleMs: FINALITY_FOLLOW_MS,
    step: async () => {
      const round = await followFinality({ ...app, logger: log }, missing);
      missing = round.missingNow;
      if (round.reopened > 0) log.warn(`finality follower: sent ${round.reopened} vanished payment(s) again`);
      // A full batch that all finalized is a backlog: go on at once.
      const { deposits } = round;
      return (
        (round.seen >= FINALITY_BATCH && round.finalized === round.seen) ||
        (deposits.seen >= FINALITY_BATCH && deposits.finalized === deposits.seen)
      );
    },
  });
}
