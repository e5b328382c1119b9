import { AppError } from '../errors.js';

const DAY_MS = 86_400_000;

/** [from, to): `to` after `from`, at most `maxDays` later (a bound on what one read scans). */
export function requireTimeRange(from: Date, to: Date, maxDays: number): void {
  if (!(to > from) || to.getTime() - from.getTime() > maxDays * DAY_MS) {
    throw new AppError('invalid_request', `to must be after from, at most ${maxDays} days later`);
  }
}
