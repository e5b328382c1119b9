/**
 * Runs one named part of a stop (closing the HTTP server, waiting for a queue's jobs in hand, ...),
 * so that a stop cut short by its deadline can say which parts were still running.
 */
export type RunStep = <T>(name: string, work: () => Promise<T>) => Promise<T>;

/** Runs the work and records nothing: for stops that have no deadline to report to (tests). */
export const untracked: RunStep = (_name, work) => work();

export interface RunningStep {
  name: string;
  /** How long it has been running, in milliseconds. */
  elapsedMs: number;
}

export type StopOutcome =
  | { kind: 'stopped'; elapsedMs: number }
  | { kind: 'failed'; elapsedMs: number; error: unknown }
  | { kind: 'timed out'; running: RunningStep[] };

/**
 * Runs `stop` with a deadline. Resolves `stopped` or `failed` when it ends in time, else
 * `timed out` after `timeoutMs` with the steps still running then, oldest first; the stop itself
 * is not cancelled (the caller ends the process).
 */
export async function stopWithin(
  stop: (run: RunStep) => Promise<void>,
  timeoutMs: number,
  now: () => number = () => performance.now(),
): Promise<StopOutcome> {
  const started = now();
  const running = new Map<symbol, { name: string; since: number }>();
  const run: RunStep = async (name, work) => {
    const id = Symbol(name);
    running.set(id, { name, since: now() });
    try {
      return await work();
    } finally {
      running.delete(id);
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<StopOutcome>((resolve) => {
    timer = setTimeout(() => {
      const at = now();
      resolve({
        kind: 'timed out',
        running: [...running.values()].map((step) => ({ name: step.name, elapsedMs: at - step.since })),
      });
    }, timeoutMs);
  });
  const finished = (async (): Promise<StopOutcome> => {
    try {
      // Through a step runner of its own: work started synchronously by `stop` is tracked too.
      await stop(run);
      return { kind: 'stopped', elapsedMs: now() - started };
    } catch (error) {
      return { kind: 'failed', elapsedMs: now() - started, error };
    }
  })();
  try {
    return await Promise.race([finished, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** "api: HTTP server (12.0 s), worker: creator-fund jobs in hand (9.5 s)", or "none". */
export function describeRunning(running: readonly RunningStep[]): string {
  if (running.length === 0) return 'none (the last step was ending)';
  return running.map((step) => `${step.name} (${(step.elapsedMs / 1000).toFixed(1)} s)`).join(', ');
}
