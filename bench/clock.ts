import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** Seconds since `started`, a performance.now() reading. */
export const secondsSince = (started: number): number => (performance.now() - started) / 1000;

/**
 * Reads `read` every `everyMs` until `done` holds of a reading or `limitMs` passed (no limit when
 * undefined): the last reading, whether it held, and the seconds waited.
 */
export async function pollUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  options: { everyMs: number; limitMs?: number },
): Promise<{ value: T; held: boolean; seconds: number }> {
  const started = performance.now();
  for (;;) {
    const value = await read();
    const held = done(value);
    if (held || (options.limitMs !== undefined && performance.now() - started > options.limitMs))
      return { value, held, seconds: secondsSince(started) };
    await sleep(options.everyMs);
  }
}
