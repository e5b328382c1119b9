import { describe, expect, test } from 'vitest';
import {
  cointrackerDate,
  csvCell,
  csvRecord,
  formatUnits,
  instantPrinter,
  jsonRecord,
  koinlyDate,
  parseClickHouseTime,
  parseUnits,
  utcDaySpan,
} from './report-format.js';

describe('report formatting', () => {
  test('formatUnits prints every place of the currency, signs and zero, never through a float', () => {
    expect(formatUnits(1_500_000n, 'usdc')).toBe('1.500000');
    expect(formatUnits(-1n, 'usdc')).toBe('-0.000001');
    expect(formatUnits(0n, 'usdc')).toBe('0.000000');
    expect(formatUnits(12_500_000_000n, 'native')).toBe('12.500000000');
    expect(formatUnits(9_007_199_254_740_993n, 'usdc')).toBe('9007199254.740993');
    expect(parseUnits('-0.000001', 'usdc')).toBe(-1n);
    expect(parseUnits('12.500000000', 'native')).toBe(12_500_000_000n);
    expect(() => parseUnits('1.5', 'usdc')).toThrow();
  });

  test('csvCell quotes a cell with a quote, comma, CR or LF (RFC 4180); records end with CRLF', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('cr\r')).toBe('"cr\r"');
    expect(csvRecord(['a', '', 'c,d'])).toBe('a,,"c,d"\r\n');
  });

  test('jsonRecord keys the values by column in order, null where absent', () => {
    expect(jsonRecord(['b', 'a'], ['1', null])).toBe('{"b":"1","a":null}\n');
  });

  test('instantPrinter prints ISO 8601 with the offset in force, across a DST change', () => {
    const utc = instantPrinter('UTC');
    expect(utc(Date.UTC(2026, 10, 29, 8, 19, 9, 123))).toBe('2026-11-29T08:19:09.123Z');
    const paris = instantPrinter('Europe/Paris');
    expect(paris(Date.UTC(2026, 0, 15, 12, 0, 0, 5))).toBe('2026-01-15T13:00:00.005+01:00');
    // 2026-03-29 01:00 UTC: Paris goes from +01:00 to +02:00.
    expect(paris(Date.UTC(2026, 2, 29, 0, 59, 59, 999))).toBe('2026-03-29T01:59:59.999+01:00');
    expect(paris(Date.UTC(2026, 2, 29, 1, 0, 0, 0))).toBe('2026-03-29T03:00:00.000+02:00');
    expect(instantPrinter('America/St_Johns')(Date.UTC(2026, 0, 1, 0, 0))).toBe(
      '2025-12-31T20:30:00.000-03:30',
    );
    expect(instantPrinter('Asia/Kolkata')(Date.UTC(2026, 0, 1, 0, 0))).toBe('2026-01-01T05:30:00.000+05:30');
  });

  test('the accounting tools get UTC dates in their own shapes', () => {
    const at = parseClickHouseTime('2026-11-02 07:05:09.999');
    expect(at).toBe(Date.UTC(2026, 10, 2, 7, 5, 9, 999));
    expect(koinlyDate(at)).toBe('2026-11-02 07:05:09');
    expect(cointrackerDate(at)).toBe('11/02/2026 07:05:09');
  });

  test('utcDaySpan: the UTC days an interval touches and the whole days inside it', () => {
    // 2026-11-01T00:00+01:00 to 2026-12-01T00:00+01:00 (a Paris month).
    const span = utcDaySpan(Date.UTC(2026, 9, 31, 23), Date.UTC(2026, 10, 30, 23));
    expect(span).toEqual({
      firstDay: '2026-10-31',
      lastDay: '2026-11-30',
      fullFromMs: Date.UTC(2026, 10, 1),
      fullToMs: Date.UTC(2026, 10, 30),
    });
    const utcMonth = utcDaySpan(Date.UTC(2026, 10, 1), Date.UTC(2026, 11, 1));
    expect(utcMonth.lastDay).toBe('2026-11-30');
    expect(utcMonth.fullToMs).toBe(Date.UTC(2026, 11, 1));
  });
});
