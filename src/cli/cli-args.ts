import { parseArgs } from 'node:util';
import { UsageError } from './usage-error.js';

type Options = NonNullable<Parameters<typeof parseArgs>[0]>['options'];

/** parseArgs, with its errors (unknown option, missing value) turned into usage errors (exit 2). */
export function parseStrict<O extends Options>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** A UTC calendar day, checked strictly (2026-02-30 is refused, not rolled over to March). */
export function parseDayArgument(value: string, flag: string): string {
  const parsed = /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(`${value}T00:00:00Z`) : undefined;
  if (!parsed || Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== value) {
    throw new UsageError(`${flag} must be a date YYYY-MM-DD, got ${JSON.stringify(value)}`);
  }
  return value;
}
