/**
 * A benchmark's integer setting from the environment (BENCH_*), or its default. Anything that is
 * not a whole number at least `min` stops the run with a message naming the variable: a typo must
 * not silently bench the default size.
 */
export function intSetting(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) {
    throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  }
  return value;
}
