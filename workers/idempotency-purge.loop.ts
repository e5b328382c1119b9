import type { App } from '../src/app/wiring.js';
import { startLoop, type BackgroundLoop } from '../src/app/background-loop.js';
import {
  IDEMPOTENCY_PURGE_BATCH,
  purgeExpiredIdempotencyKeys,
} from '../src/app/write-path/idempotency-keys.js';

/** Pause between two purges that left nothing expired behind. */
export const IDEMPOTENCY_PURGE_MS = 60_000;

/**
 * Deletes Idempotency-Key records past their 24 h TTL, a bounded batch at a time (going on at once
 * while batches come back full), so the table holds about a day of keys instead of every key ever
 * sent.
 */
export function startIdempotencyPurge(app: App): BackgroundLoop {
  return startLoop({
    name: 'idempotency purge',
    log: app.logger.child({ role: 'worker', loop: 'idempotency-purge' }),
    idleMs: IDEMPOTENCY_PURGE_MS,
    step: async () => (await purgeExpiredIdempotencyKeys(app.db)) >= IDEMPOTENCY_PURGE_BATCH,
  });
}
