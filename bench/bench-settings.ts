import { ROLE_NAMES, type RoleName } from '../workers/role.js';

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
  const value = wholeNumber(raw, min);
  if (value === undefined)
    throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  return value;
}

/** `raw` as a whole number at least `min` (a list item of listSetting), else undefined. */
export function wholeNumber(raw: string, min: number): number | undefined {
  const value = Number(raw);
  return Number.isSafeInteger(value) && value >= min ? value : undefined;
}

/**
 * A comma-separated setting (BENCH_RATES=50,200), each item trimmed and read by `parse`, or the
 * default (`smoke` in a smoke run, when given). An item `parse` does not know (undefined) stops the
 * run with a message naming the variable.
 */
export function listSetting<T>(
  name: string,
  fallback: string,
  parse: (item: string) => T | undefined,
  smoke?: string,
): T[] {
  const raw = process.env[name] || (SMOKE && smoke !== undefined ? smoke : fallback);
  return raw.split(',').map((item) => {
    const value = parse(item.trim());
    if (value === undefined) throw new Error(`${name}: ${JSON.stringify(item)} is not valid here (${raw})`);
    return value;
  });
}

/** BENCH_ROLES: the service's roles, each a known one and `required` among them. */
export function rolesSetting(fallback: string, required: readonly RoleName[] = []): RoleName[] {
  const roles = listSetting('BENCH_ROLES', fallback, (item) =>
    ROLE_NAMES.includes(item as RoleName) ? (item as RoleName) : undefined,
  );
  const missing = required.filter((role) => !roles.includes(role));
  if (missing.length > 0) throw new Error(`BENCH_ROLES must include ${required.join(' and ')}`);
  return roles;
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
