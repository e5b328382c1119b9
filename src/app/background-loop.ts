import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';

export interface BackgroundLoop {
  /** Resolves once the iteration in progress (if any) has finished. */
  stop(): Promise<void>;
}

export interface LoopOptions {
  name: string;
  log: Logger;
  /** Pause after an iteration that found nothing more to do. */
  idleMs: number;
  /** One unit of work; true when there is more right away (run again without pausing). */
  step: () => Promise<boolean>;
  /** Longest pause after failures (the pause doubles from idleMs up to this). @defaultValue 30_000 */
  maxBackoffMs?: number;
}

/**
 * A polling loop for work that lives in Postgres (shipping events, reconciling): runs `step` again
 * at once while it reports more work, pauses `idleMs` when idle, and backs off (doubling) while it
 * fails, logging the first failure of a streak and the recovery, not every retry.
 */
export function startLoop(options: LoopOptions): BackgroundLoop {
  const { name, log, idleMs, step, maxBackoffMs = 30_000 } = options;
  const stopping = new AbortController();
  let failures = 0;
  const done = (async () => {
    while (!stopping.signal.aborted) {
      let pauseMs = idleMs;
      try {
        const more = await step();
        if (failures > 0) log.info(`${name}: working again after ${failures} failed attempt(s)`);
        failures = 0;
        if (more) continue;
      } catch (error) {
        failures++;
        if (failures === 1) log.warn({ err: error }, `${name} failed; retrying with backoff`);
        pauseMs = Math.min(maxBackoffMs, idleMs * 2 ** failures);
      }
      await sleep(pauseMs, undefined, { signal: stopping.signal }).catch(() => {});
    }
  })();
  return {
    stop: async () => {
      stopping.abort();
      await done;
    },
  };
}
