/*
 * How report files print things: RFC 4180 CSV cells, amounts as decimal strings in their
 * currency's units (never floats), instants in a timezone. Pure: the writers in
 * src/app/reports/report-writers/ call these for every row.
 */

import { NATIVE_DECIMALS } from '../money/native.js';
import { zoneOffsetMs } from './zone-offset.js';

/** The ledger's currencies, as stored (ledger_accounts.currency, ClickHouse ledger_legs.currency). */
export type LedgerCurrency = 'usdc' | 'native';

/**
 * The native token's symbol in report files. Neither the code nor the config names one (the mint
 * is created by the bootstrap or given as NATIVE_MINT): this is the one place it is decided.
 */
export const NATIVE_SYMBOL = 'LFEED';
export const USDC_SYMBOL = 'USDC';

/** Decimal places of each currency's base unit: USDC 6 (micro-USD), the native token 9. */
const DECIMALS: Record<LedgerCurrency, number> = { usdc: 6, native: NATIVE_DECIMALS };

/** The symbol a file prints in its `currency` column. */
export function currencySymbol(currency: LedgerCurrency): string {
  return currency === 'usdc' ? USDC_SYMBOL : NATIVE_SYMBOL;
}

/** A stored currency from what ClickHouse or Postgres answered; anything unknown is a bug. */
export function ledgerCurrency(text: string): LedgerCurrency {
  if (text === 'usdc' || text === 'native') return text;
  throw new Error(`unknown ledger currency "${text}"`);
}

/**
 * Base units as a decimal string with every place of the currency ("1.500000", "-0.000001000"):
 * fixed places so a column reads aligned and sums exactly, never through a float.
 */
export function formatUnits(units: bigint, currency: LedgerCurrency): string {
  const decimals = DECIMALS[currency];
  const unit = 10n ** BigInt(decimals);
  const sign = units < 0n ? '-' : '';
  const abs = units < 0n ? -units : units;
  return `${sign}${abs / unit}.${(abs % unit).toString().padStart(decimals, '0')}`;
}

/** The base units a `formatUnits` string stands for (tests, and readers of our own files). */
export function parseUnits(text: string, currency: LedgerCurrency): bigint {
  const match = /^(-?)(\d+)\.(\d+)$/.exec(text);
  if (!match || match[3]!.length !== DECIMALS[currency])
    throw new Error(`"${text}" is not a ${currency} amount`);
  const units = BigInt(match[2]!) * 10n ** BigInt(DECIMALS[currency]) + BigInt(match[3]!);
  return match[1] === '-' ? -units : units;
}

/** One RFC 4180 cell: quoted when it holds a quote, comma, CR or LF (quotes doubled). */
export function csvCell(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** One CSV record with its CRLF line end. */
export function csvRecord(values: readonly string[]): string {
  return `${values.map(csvCell).join(',')}\r\n`;
}

/** One JSON Lines record: the columns as keys, in order; `null` where a value is absent. */
export function jsonRecord(columns: readonly string[], values: readonly (string | null)[]): string {
  const object: Record<string, string | null> = {};
  columns.forEach((column, i) => {
    object[column] = values[i] ?? null;
  });
  return `${JSON.stringify(object)}\n`;
}

/**
 * An instant ClickHouse printed as `YYYY-MM-DD HH:MM:SS[.fff]` in UTC (DateTime64 text), in
 * milliseconds since the epoch.
 */
export function parseClickHouseTime(text: string): number {
  const ms = Date.parse(`${text.replace(' ', 'T')}Z`);
  if (Number.isNaN(ms)) throw new Error(`"${text}" is not a ClickHouse time`);
  return ms;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Hours whose offset one instantPrinter keeps (a year is 8,784): past it the cache starts over. */
const PRINTER_HOURS = 20_000;

/**
 * Prints instants in one IANA timezone as ISO 8601 with milliseconds and the offset in force then
 * (`2026-11-29T08:19:09.123+01:00`; UTC as `Z`). Rows do not come in the order of every time they
 * print (ledger.itemized's `finalized_at` after each `created_at`; reconciliation's `checked_at` in
 * movement order), so the offset is kept per UTC hour, in any order: an hour whose first and last
 * minutes have the same offset has it throughout (a zone changes offset at most once an hour); an
 * hour with a change asks per minute (offsets change on minute boundaries).
 */
export function instantPrinter(timezone: string): (ms: number) => string {
  if (timezone === 'UTC' || timezone === 'Etc/UTC') return (ms) => new Date(ms).toISOString();
  const HOUR = 3_600_000;
  const minuteOffset = (minute: number) => Math.round(zoneOffsetMs(minute * 60_000, timezone) / 60_000);
  /** Offset in minutes of each UTC hour seen; null for an hour in which it changes. */
  const hours = new Map<number, number | null>();
  const offsetMinutes = (ms: number): number => {
    const hour = Math.floor(ms / HOUR);
    let offset = hours.get(hour);
    if (offset === undefined) {
      const first = minuteOffset(hour * 60);
      offset = first === minuteOffset(hour * 60 + 59) ? first : null;
      if (hours.size >= PRINTER_HOURS) hours.clear();
      hours.set(hour, offset);
    }
    return offset ?? minuteOffset(Math.floor(ms / 60_000));
  };
  return (ms) => {
    const offset = offsetMinutes(ms);
    const local = new Date(ms + offset * 60_000).toISOString().slice(0, 23);
    const abs = Math.abs(offset);
    return `${local}${offset < 0 ? '-' : '+'}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  };
}

/** Koinly's date: `YYYY-MM-DD HH:mm:ss` in UTC. */
export function koinlyDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/** CoinTracker's date: `MM/DD/YYYY HH:mm:ss` in UTC. */
export function cointrackerDate(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())}/${d.getUTCFullYear()} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

/** The UTC day (`YYYY-MM-DD`) an instant falls in. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * How `[start, end)` lies over UTC days (ClickHouse `reconciliation.ledger_day` is a movement's UTC
 * day): the days it touches (`firstDay`..`lastDay`), and the whole days inside it
 * (`[fullFrom, fullTo)` as instants; empty when fullFrom >= fullTo). A row of a whole day is in the
 * interval for sure; a row of an edge day needs its exact instant.
 */
export function utcDaySpan(
  startMs: number,
  endMs: number,
): { firstDay: string; lastDay: string; fullFromMs: number; fullToMs: number } {
  const DAY = 86_400_000;
  const fullFromMs = Math.ceil(startMs / DAY) * DAY;
  const fullToMs = Math.floor(endMs / DAY) * DAY;
  return { firstDay: utcDay(startMs), lastDay: utcDay(endMs - 1), fullFromMs, fullToMs };
}
