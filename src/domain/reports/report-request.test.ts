import { describe, expect, test } from 'vitest';
import { AppError } from '../errors.js';
import { REPORT_COLUMNS } from './report-kinds.js';
import {
  checkReportAccess,
  parseReportRequest,
  reportContentType,
  reportParamsHash,
  type ReportRequest,
} from './report-request.js';

const NOW = new Date('2026-11-29T12:00:00Z');
const base = { type: 'ledger.itemized', interval_start: '2026-10-01', interval_end: '2026-11-01' };

function refusal(body: unknown): { code: string; field: unknown } {
  try {
    parseReportRequest(body, NOW);
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, field: error.details.field };
    throw error;
  }
  throw new Error('accepted');
}

describe('parseReportRequest', () => {
  test('defaults: UTC, csv, every column of the type, no account', () => {
    expect(parseReportRequest(base, NOW)).toEqual({
      type: 'ledger.itemized',
      intervalStart: new Date('2026-10-01T00:00:00Z'),
      intervalEnd: new Date('2026-11-01T00:00:00Z'),
      timezone: 'UTC',
      columns: REPORT_COLUMNS['ledger.itemized'],
      format: 'csv',
      account: null,
    });
  });

  test('a local date is read in the timezone; an instant with an offset is not', () => {
    const parsed = parseReportRequest(
      { ...base, timezone: 'America/New_York', interval_end: '2026-11-01T12:30:00+01:00' },
      NOW,
    );
    expect(parsed.intervalStart.toISOString()).toBe('2026-10-01T04:00:00.000Z'); // EDT, UTC-4
    expect(parsed.intervalEnd.toISOString()).toBe('2026-11-01T11:30:00.000Z');
    const winter = parseReportRequest(
      {
        ...base,
        timezone: 'America/New_York',
        interval_start: '2026-11-02T08:15',
        interval_end: '2026-11-03',
      },
      new Date('2026-12-01T00:00:00Z'),
    );
    expect(winter.intervalStart.toISOString()).toBe('2026-11-02T13:15:00.000Z'); // EST, UTC-5
    expect(parseReportRequest({ ...base, timezone: 'Asia/Kolkata' }, NOW).intervalStart.toISOString()).toBe(
      '2026-09-30T18:30:00.000Z',
    );
  });

  test('columns: a subset in the order given', () => {
    expect(parseReportRequest({ ...base, columns: ['amount', 'account'] }, NOW).columns).toEqual([
      'amount',
      'account',
    ]);
  });

  test('every refusal is invalid_request naming its field', () => {
    expect(refusal(null)).toEqual({ code: 'invalid_request', field: 'body' });
    expect(refusal({ ...base, type: 'ledger' })).toEqual({ code: 'invalid_request', field: 'type' });
    expect(refusal({ ...base, colour: 'red' })).toEqual({ code: 'invalid_request', field: 'colour' });
    expect(refusal({ ...base, format: 'xlsx' })).toEqual({ code: 'invalid_request', field: 'format' });
    expect(refusal({ ...base, format: 'koinly' })).toEqual({ code: 'invalid_request', field: 'format' });
    expect(refusal({ ...base, columns: [] })).toEqual({ code: 'invalid_request', field: 'columns' });
    expect(refusal({ ...base, columns: ['amount', 'nope'] })).toEqual({
      code: 'invalid_request',
      field: 'columns',
    });
    expect(refusal({ ...base, columns: ['amount', 'amount'] })).toEqual({
      code: 'invalid_request',
      field: 'columns',
    });
    expect(refusal({ ...base, type: 'account.statement', format: 'koinly', columns: ['amount'] })).toEqual({
      code: 'invalid_request',
      field: 'columns',
    });
    expect(refusal({ ...base, timezone: 'Mars/Olympus' })).toEqual({
      code: 'invalid_request',
      field: 'timezone',
    });
    expect(refusal({ ...base, timezone: '+01:00' })).toEqual({ code: 'invalid_request', field: 'timezone' });
    expect(refusal({ ...base, interval_start: '2026-02-30' })).toEqual({
      code: 'invalid_request',
      field: 'interval_start',
    });
    expect(refusal({ ...base, interval_start: 1_700_000_000 })).toEqual({
      code: 'invalid_request',
      field: 'interval_start',
    });
    expect(refusal({ ...base, interval_end: '2026-11-01T25:00:00Z' })).toEqual({
      code: 'invalid_request',
      field: 'interval_end',
    });
    expect(refusal({ ...base, interval_end: '2026-10-01' })).toEqual({
      code: 'invalid_request',
      field: 'interval_end',
    });
    expect(refusal({ ...base, interval_end: '2026-11-29T12:00:01Z' })).toEqual({
      code: 'invalid_request',
      field: 'interval_end',
    });
    expect(refusal({ ...base, interval_start: '2025-10-01', interval_end: '2026-10-03' })).toEqual({
      code: 'invalid_request',
      field: 'interval_end',
    });
    expect(refusal({ ...base, account: 'someone' })).toEqual({ code: 'invalid_request', field: 'account' });
    expect(refusal({ ...base, type: 'account.statement', account: 'Not A Handle' })).toEqual({
      code: 'invalid_request',
      field: 'account',
    });
  });

  test('366 days is allowed, interval_end equal to the request time too', () => {
    expect(() =>
      parseReportRequest(
        { ...base, interval_start: '2025-11-29T12:00:00Z', interval_end: NOW.toISOString() },
        NOW,
      ),
    ).not.toThrow();
  });
});

describe('checkReportAccess', () => {
  const statement = parseReportRequest({ ...base, type: 'account.statement' }, NOW);
  const user = { handle: 'alice', role: 'user', scopes: new Set(['read']) };
  const code = (run: () => void) => {
    try {
      run();
      return 'ok';
    } catch (error) {
      return (error as AppError).code;
    }
  };

  test('an own statement needs read; everything else the finance role', () => {
    expect(code(() => checkReportAccess(user, statement))).toBe('ok');
    expect(code(() => checkReportAccess(user, { ...statement, account: 'alice' }))).toBe('ok');
    expect(code(() => checkReportAccess({ ...user, scopes: new Set(['post']) }, statement))).toBe(
      'forbidden',
    );
    expect(code(() => checkReportAccess(user, { ...statement, account: 'bob' }))).toBe('forbidden');
    const ledger: ReportRequest = { ...statement, type: 'ledger.itemized', account: null };
    expect(code(() => checkReportAccess(user, ledger))).toBe('forbidden');
    expect(code(() => checkReportAccess({ ...user, role: 'finance' }, ledger))).toBe('ok');
    expect(code(() => checkReportAccess({ ...user, role: 'admin' }, { ...statement, account: 'bob' }))).toBe(
      'ok',
    );
  });
});

test('the params hash is the same for the same parameters however they were written', () => {
  const spec = (body: Record<string, unknown>) => {
    const r = parseReportRequest({ ...base, ...body }, NOW);
    return { ...r, accountId: null };
  };
  expect(reportParamsHash(spec({}))).toBe(
    reportParamsHash(spec({ interval_start: '2026-10-01T02:00:00+02:00', timezone: 'UTC', format: 'csv' })),
  );
  expect(reportParamsHash(spec({}))).not.toBe(reportParamsHash(spec({ format: 'jsonl' })));
  expect(reportContentType('koinly')).toBe('text/csv; charset=utf-8');
});
