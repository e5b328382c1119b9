/**
 * When a failed delivery is tried again (issue 39): 5 s, 15 s, 30 s, 1 min, 2 min, 5 min, 10 min,
 * 30 min, then every hour, until the event has been failing for the retry window (3 days by
 * default, WEBHOOK_RETRY_WINDOW_MS); then the endpoint is disabled. The first steps are short so a
 * receiver that was down for a minute has its backlog about a minute after it is back.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  5_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000,
];

/** Between two attempts once the schedule above is used up. */
export const RETRY_STEADY_DELAY_MS = 3_600_000;

/** The wait after the `failedAttempts`-th failed attempt (1 = the first failure) of one event. */
export function retryDelayMs(failedAttempts: number): number {
  if (failedAttempts < 1) return 0;
  return RETRY_DELAYS_MS[failedAttempts - 1] ?? RETRY_STEADY_DELAY_MS;
}

export type RetryDecision = { kind: 'retry'; at: Date } | { kind: 'disable'; reason: string };

/**
 * After a failed attempt: when to try again, or give up. `failingSince` is the first failure of the
 * event now at the head of the endpoint's queue. The last retry is pulled in to the window's end,
 * so an endpoint is disabled when its window closes rather than up to an hour after.
 */
export function afterFailure(input: {
  failedAttempts: number;
  failingSince: Date;
  now: Date;
  retryWindowMs: number;
}): RetryDecision {
  const { failedAttempts, failingSince, now, retryWindowMs } = input;
  const windowEnd = failingSince.getTime() + retryWindowMs;
  if (now.getTime() >= windowEnd) {
    return {
      kind: 'disable',
      reason:
        `deliveries failed for ${describeDuration(now.getTime() - failingSince.getTime())} ` +
        `(${failedAttempts} attempts since ${failingSince.toISOString()}); enable the endpoint to resume`,
    };
  }
  return { kind: 'retry', at: new Date(Math.min(now.getTime() + retryDelayMs(failedAttempts), windowEnd)) };
}

function describeDuration(ms: number): string {
  if (ms >= 86_400_000) return `${(ms / 86_400_000).toFixed(1)} days`;
  if (ms >= 3_600_000) return `${(ms / 3_600_000).toFixed(1)} hours`;
  if (ms >= 60_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 1000)} s`;
}
