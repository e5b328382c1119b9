/**
 * BENCH_SMOKE=1 runs a bench once at tiny sizes, for `npm test` (test/benches-smoke.test.ts), so a
 * bench that no longer starts fails the tests. Every size and duration takes its smoke value (a
 * BENCH_* variable that is set still wins), and targets are printed (MISS) but not held: a tiny
 * run's figures say nothing about speed. A bench's checks of its work still hold (transfers
 * confirmed, books that balance, answers 2xx): a failed check, or a crash, still exits 1.
 */
export const SMOKE = flagSetting('BENCH_SMOKE');

/**
 * A benchmark's integer setting from the environment (BENCH_*), or its default (`smoke` in a smoke
 * run, when given). Anything that is not a whole number at least `min` stops the run with a message
 * naming the variable: a typo must not silently bench the default size.
 */
export function intSetting(name: string, fallback: number, min: number, smoke?: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return SMOKE && smoke !== undefined ? smoke : fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) {
    throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** A size with no variable of its own: `full`, or `smoke` in a smoke run. */
export const sized = (full: number, smoke: number): number => (SMOKE ? smoke : full);

/** A target's verdict as printed: a miss is FAIL, or MISS in a smoke run (not held there). */
export const targetMark = (met: boolean): string => (met ? 'PASS' : SMOKE ? 'MISS' : 'FAIL');

/** Whether a run passes: its checks always, its targets except in a smoke run. */
export const passes = (checksHeld: boolean, targetsMet: boolean): boolean =>
  checksHeld && (targetsMet || SMOKE);

function flagSetting(name: string): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '' || raw === '0') return false;
  if (raw === '1') return true;
  throw new Error(`${name} must be 0 or 1, got ${JSON.stringify(raw)}`);
}
