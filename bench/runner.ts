import type { RunningService } from '../src/service.js';
import type { RoleName } from '../workers/role.js';
import { startBenchService } from './bench-service.js';
import { passes, SMOKE, targetMark } from './bench-settings.js';

/** Problems printed above a verdict at most: a broken run may find one per account. */
const MAX_PROBLEMS_PRINTED = 20;

/**
 * What `runBench` hands a bench script. A check is the bench's work done right (transfers
 * confirmed, books that balance, answers 2xx): it holds in every run. A target is a figure against
 * the mark: held except in a smoke run (bench-settings.ts).
 */
export interface Bench {
  /** Runs `cleanup` once when the run ends, throws or is interrupted; the last deferred runs first. */
  defer: (cleanup: () => unknown) => void;
  /** The real service on a fresh embedded stack (bench-service.ts), stopped when the run ends. */
  startService: (roles: RoleName[], env?: Readonly<Record<string, string>>) => Promise<RunningService>;
  /** A check that failed, said in words: printed above the verdict, and the run fails. */
  problem: (text: string) => void;
  readonly problems: readonly string[];
  /** A check whose outcome the bench printed itself: the run fails when it did not hold. */
  check: (held: boolean) => boolean;
  /** A target's outcome; its mark as printed: PASS, FAIL, or MISS for a smoke run's miss. */
  target: (met: boolean) => string;
  /** A line that is both a check and a target: FAIL when the check failed, else the target's mark. */
  mark: (checked: boolean, met: boolean) => string;
}

/**
 * Runs a bench script's `main`, the one way every bench starts, ends and exits. When main returns
 * a summary, the problems and then `PASS: <summary>` (or FAIL) are printed; the exit code is 0 only
 * when every check held, every target was met (or the run is a smoke run), main did not throw and
 * every clean-up succeeded. On SIGINT or SIGTERM the clean-ups run before the process exits (130 or
 * 143; a second signal exits at once): the embedded Postgres and Redis run in process groups of
 * their own, which a Ctrl-C does not reach, and would outlive the run with its temporary DATA_DIR.
 */
export function runBench(main: (bench: Bench) => Promise<string | void>): void {
  if (SMOKE) console.log('smoke run (BENCH_SMOKE=1): tiny sizes, targets not held, figures mean nothing');
  const cleanups: Array<() => unknown> = [];
  const problems: string[] = [];
  let checksHeld = true;
  let targetsMet = true;
  let interrupted = false;
  /** Services still starting: a signal waits for them, so that their stop is deferred before it runs. */
  const starting = new Set<Promise<unknown>>();
  const bench: Bench = {
    defer: (cleanup) => void cleanups.push(cleanup),
    startService: async (roles, env) => {
      if (interrupted) throw new Error('interrupted: no service starts now');
      const started = startBenchService(roles, env);
      starting.add(started);
      try {
        const { service, stop } = await started;
        cleanups.push(stop);
        return service;
      } finally {
        starting.delete(started);
      }
    },
    problem: (text) => void problems.push(text),
    problems,
    check: (held) => {
      checksHeld &&= held;
      return held;
    },
    target: (met) => {
      targetsMet &&= met;
      return targetMark(met);
    },
    mark: (checked, met) => (bench.check(checked) ? bench.target(met) : 'FAIL'),
  };

  let cleaning: Promise<boolean> | undefined;
  /** Every clean-up once, the last deferred first, each even when an earlier one threw; whether all succeeded. */
  const cleanUp = () =>
    (cleaning ??= (async () => {
      let clean = true;
      for (let cleanup = cleanups.pop(); cleanup; cleanup = cleanups.pop()) {
        try {
          await cleanup();
        } catch (error) {
          console.error(error);
          clean = false;
        }
      }
      return clean;
    })());

  const onSignal = (signal: NodeJS.Signals) => {
    const code = signal === 'SIGINT' ? 130 : 143;
    if (interrupted) process.exit(code);
    interrupted = true;
    console.error(`${signal}: cleaning up before exiting (${signal} again to exit at once)`);
    void Promise.allSettled(starting)
      .then(cleanUp)
      .finally(() => process.exit(code));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  void (async () => {
    let summary: string | void = undefined;
    let crashed = false;
    try {
      summary = await main(bench);
    } catch (error) {
      // Once interrupted, main fails as its service stops under it: that is no news.
      if (!interrupted) console.error(error);
      crashed = true;
    }
    const clean = await cleanUp();
    if (interrupted) return; // onSignal exits
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    const ok = !crashed && clean && problems.length === 0 && passes(checksHeld, targetsMet);
    for (const problem of problems.slice(0, MAX_PROBLEMS_PRINTED)) console.log(`! ${problem}`);
    if (problems.length > MAX_PROBLEMS_PRINTED)
      console.log(`! ... and ${problems.length - MAX_PROBLEMS_PRINTED} more`);
    if (summary !== undefined && !crashed) {
      const count = problems.length > 0 ? `, ${problems.length} problem(s)` : '';
      console.log(`${ok ? 'PASS' : 'FAIL'}: ${summary}${count}`);
    }
    process.exitCode = ok ? 0 : 1;
  })();
}
