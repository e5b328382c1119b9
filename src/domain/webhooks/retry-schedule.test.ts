import { describe, expect, test } from 'vitest';
import { afterFailure, retryDelayMs } from './retry-schedule.js';

describe('webhook retry schedule', () => {
  test('5 s, 15 s, 30 s, 1 min, 2 min, 5 min, 10 min, 30 min, then every hour', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 50].map(retryDelayMs)).toEqual([
      5_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000, 3_600_000, 3_600_000,
    ]);
  });

  test('retries within the window, the last one pulled in to its end; disables once it is over', () => {
    const since = new Date('2026-01-01T00:00:00Z');
    const window = 3 * 86_400_000;
    const at = (ms: number) => new Date(since.getTime() + ms);
    expect(
      afterFailure({ failedAttempts: 1, failingSince: since, now: since, retryWindowMs: window }),
    ).toEqual({
      kind: 'retry',
      at: at(5_000),
    });
    expect(
      afterFailure({
        failedAttempts: 80,
        failingSince: since,
        now: at(window - 60_000),
        retryWindowMs: window,
      }),
    ).toEqual({ kind: 'retry', at: at(window) });
    const over = afterFailure({
      failedAttempts: 81,
      failingSince: since,
      now: at(window),
      retryWindowMs: window,
    });
    expect(over.kind).toBe('disable');
    expect(over.kind === 'disable' && over.reason).toContain('3.0 days');
  });
});
