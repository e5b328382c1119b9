import type { App } from '../src/app/wiring.js';
import { startLoop, type BackgroundLoop } from '../src/app/background-loop.js';
import { purgeOldEvents } from '../src/adapters/postgres/event-log.repository.js';

/** Pause between two purges that left nothing old behind. */
export const EVENT_PURGE_MS = 3_600_000;
const EVENT_PURGE_BATCH = 5_000;

/**
 * Forgets account events and webhook delivery attempts older than EVENT_RETENTION_DAYS (30 by
 * default), a bounded batch at a time, going on at once while batches come back full.
 */
export function startEventRetention(app: App): BackgroundLoop {
  return startLoop({
    name: 'event retention',
    log: app.logger.child({ role: 'worker', loop: 'event-retention' }),
    idleMs: EVENT_PURGE_MS,
    step: async () =>
      (await purgeOldEvents(app.db, app.config.EVENT_RETENTION_DAYS, EVENT_PURGE_BATCH)) >= EVENT_PURGE_BATCH,
  });
}
