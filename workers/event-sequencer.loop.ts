import type { App } from '../src/app/wiring.js';
import { startLoop, type BackgroundLoop } from '../src/app/background-loop.js';
import { SEQUENCE_BATCH, sequenceEvents } from '../src/app/events/account-events.js';

/** Pause between two turns that found nothing staged: an event waits at most this long to be numbered. */
export const EVENT_SEQUENCE_MS = 100;

/**
 * The event sequencer of the worker role: numbers the events changes staged into each account's
 * log (sequenceEvents), then wakes `onSequenced` (the webhook dispatcher of this process) and the
 * API processes' streams. Several workers may run it: one at a time numbers (an advisory lock),
 * the others' turns find the lock taken and do nothing.
 */
export function startEventSequencer(
  app: App,
  onSequenced: (accounts: readonly string[]) => void,
): BackgroundLoop {
  const log = app.logger.child({ role: 'worker', loop: 'event-sequencer' });
  // Whether the last turn numbered events: the next one then skips its look (sequenceEvents).
  let busy = false;
  return startLoop({
    name: 'event sequencer',
    log,
    idleMs: EVENT_SEQUENCE_MS,
    step: async () => {
      const moved = await sequenceEvents(
        { db: app.db, liveEvents: app.liveEvents, logger: log },
        onSequenced,
        {
          lookFirst: !busy,
        },
      );
      busy = moved > 0;
      return moved >= SEQUENCE_BATCH;
    },
  });
}
