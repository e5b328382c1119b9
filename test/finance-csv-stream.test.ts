import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ClickHouse } from '../src/adapters/clickhouse/index.js';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * The day's reconciliation CSV streams every verdict, however many, straight from ClickHouse: a
 * day past the JSON report's 100,000 bound downloads whole (before, the CSV stopped at 100,000
 * rows without a word), a slow reader holds the ClickHouse read back, and a read that fails midway
 * cuts the response so the client sees an error instead of a short file. The JSON report keeps
 * its bound and says when it is cut.
 */
let env: TestEnv;
let server: FastifyInstance;
let base: string;
let financeKey: string;
const logLines: string[] = [];

const DAY = '2026-11-20';
const OTHER_DAY = '2026-11-21';
/** Past the JSON bound (100,000), in three INSERT ... SELECT batches of 50,000. */
const ROWS = 150_000;
/** Every third verdict is `matched`; the rest (100,000) plus the re-checks below are exceptions. */
const BATCH = 50_000;

beforeAll(async () => {
  env = await openTestEnv({});
  // The app's own deps with a logger that keeps what it writes, to read why a stream was cut.
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  server = await buildServer({ ...env.app, logger: pino({ level: 'warn' }, sink) }, { queueBoard: false });
  base = await server.listen({ port: 0, host: '127.0.0.1' });
  const finance = await createAccount(env.app, { handle: 'csv_books', role: 'finance' });
  financeKey = (await createApiKey(env.app.apiKeys, finance.id)).key;

  const ch = env.app.clickhouse;
  const reconciliation = ch.table('reconciliation');
  for (let start = 0; start < ROWS; start += BATCH) {
    // Amounts vary per row so a lost or repeated row changes the sum; some details need quoting.
    await ch.client.command({
      query: `INSERT INTO ${reconciliation}
                (movement_id, signature, ledger_day, status, ledger_amount, chain_amount, commitment, detail, checked_at)
              SELECT generateUUIDv4(), concat('sig-', toString(number)), toDate('${DAY}'),
                     if(number % 3 = 0, 'matched', 'amount_mismatch'),
                     1000000 + number, if(number % 3 = 0, 1000000 + number, 600000),
                     'finalized',
                     multiIf(number % 1000 = 1, 'chain paid "0.6", not 1', number % 1000 = 2, 'two\\nlines', ''),
                     toDateTime64('${DAY} 12:00:00', 3, 'UTC')
                FROM numbers(${start}, ${BATCH})`,
    });
  }
  // Re-checks of 1,000 movements (a later verdict for the same movement): FINAL keeps one row each.
  await ch.client.command({
    query: `INSERT INTO ${reconciliation}
            SELECT movement_id, signature, ledger_day, 'missing', ledger_amount, 0, '', 'rechecked',
                   checked_at + toIntervalHour(1)
              FROM ${reconciliation} WHERE ledger_day = toDate('${DAY}') AND status = 'matched' LIMIT 1000`,
  });
  await ch.client.command({
    query: `INSERT INTO ${reconciliation}
            SELECT generateUUIDv4(), 'sig-other-day', toDate('${OTHER_DAY}'), 'missing', 5, 0, '', '', now64(3)`,
  });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await env?.close();
});

/** What ClickHouse holds for the day: verdicts (one per movement) and the sum of ledger amounts. */
async function heldByClickHouse(ch: ClickHouse, day: string) {
  const result = await ch.client.query({
    query: `SELECT count() AS n, toString(sum(ledger_amount)) AS ledger, countIf(status != 'matched') AS exceptions
              FROM ${ch.table('reconciliation')} FINAL WHERE ledger_day = {day:Date}`,
    query_params: { day },
    format: 'JSONEachRow',
  });
  const [row] = await result.json<{ n: string; ledger: string; exceptions: string }>();
  return { rows: Number(row!.n), ledgerMicro: BigInt(row!.ledger), exceptions: Number(row!.exceptions) };
}

/** RFC 4180 records of a CSV text (quoted cells may hold commas, quotes and line breaks). */
function* csvRecords(text: string): Generator<string[]> {
  let i = 0;
  while (i < text.length) {
    const record: string[] = [];
    for (;;) {
      let cell = '';
      if (text[i] === '"') {
        i += 1;
        for (;;) {
          const quote = text.indexOf('"', i);
          if (quote === -1) throw new Error('unterminated quoted cell');
          cell += text.slice(i, quote);
          i = quote + 1;
          if (text[i] === '"') {
            cell += '"';
            i += 1;
          } else break;
        }
      } else {
        const end = text.slice(i).search(/[,\r]/);
        const stop = end === -1 ? text.length : i + end;
        cell = text.slice(i, stop);
        i = stop;
      }
      record.push(cell);
      if (text[i] === ',') {
        i += 1;
        continue;
      }
      if (text.startsWith('\r\n', i)) i += 2;
      else if (i < text.length) throw new Error(`expected CRLF at ${i}`);
      break;
    }
    yield record;
  }
}

/** "1.000123" or "-2" to micro-dollars, exactly. */
function toMicro(usd: string): bigint {
  const [whole, fraction = ''] = usd.replace('-', '').split('.');
  const micro = BigInt(whole!) * 1_000_000n + BigInt(fraction.padEnd(6, '0'));
  return usd.startsWith('-') ? -micro : micro;
}

function csvRequest(day: string, init: RequestInit = {}) {
  return fetch(`${base}/api/v1/finance/reconciliation?date=${day}`, {
    ...init,
    headers: { authorization: `Bearer ${financeKey}`, accept: 'text/csv' },
  });
}

describe('the reconciliation CSV streams every verdict of the day', () => {
  test('a day of more than 100,000 verdicts downloads whole: every row once, the amounts adding up to what ClickHouse holds', async () => {
    const held = await heldByClickHouse(env.app.clickhouse, DAY);
    expect(held.rows).toBe(ROWS);

    const response = await csvRequest(DAY);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="reconciliation-${DAY}.csv"`,
    );
    const text = await response.text();
    expect(text.endsWith('\r\n')).toBe(true);
    const records = csvRecords(text);
    expect(records.next().value).toEqual([
      'ledger_day',
      'movement_id',
      'signature',
      'status',
      'ledger_amount_usd',
      'chain_amount_usd',
      'commitment',
      'detail',
      'checked_at',
    ]);
    let rows = 0;
    let ledgerMicro = 0n;
    const movements = new Set<string>();
    const details = new Set<string>();
    for (const record of records) {
      expect(record).toHaveLength(9);
      const [day, movementId, , status, ledgerUsd, , , detail] = record as [string, ...string[]];
      expect(day).toBe(DAY);
      rows += 1;
      ledgerMicro += toMicro(ledgerUsd!);
      movements.add(movementId!);
      details.add(detail!);
      if (status === 'missing') expect(detail).toBe('rechecked');
    }
    expect(rows).toBe(held.rows);
    expect(movements.size).toBe(held.rows);
    expect(ledgerMicro).toBe(held.ledgerMicro);
    // Cells with quotes and line breaks came through RFC 4180 quoting intact.
    expect(details).toContain('chain paid "0.6", not 1');
    expect(details).toContain('two\nlines');
    // Amounts are decimal strings of micro-dollars, as before: 1000000 + 7 is 1.000007.
    expect(text).toContain(',sig-7,amount_mismatch,1.000007,0.6,finalized,,');
  }, 120_000);

  test('a slow reader holds the ClickHouse read back; reading on, it gets the rest', async () => {
    const ch = env.app.clickhouse;
    const real = ch.streamRows.bind(ch);
    let pulled = 0;
    ch.streamRows = <T>(query: Parameters<ClickHouse['streamRows']>[0]) => ({
      async *[Symbol.asyncIterator]() {
        for await (const row of real<T>(query)) {
          pulled += 1;
          yield row;
        }
      },
    });
    try {
      const response = await csvRequest(DAY);
      const reader = response.body!.getReader();
      let bytes = (await reader.read()).value!.length;
      await sleep(1_500);
      // Socket and stream buffers hold a few MB (~190 bytes a row); the rest waits in ClickHouse.
      const pulledWhilePaused = pulled;
      expect(pulledWhilePaused).toBeLessThan(ROWS / 2);
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bytes += value.length;
      }
      expect(pulled).toBe(ROWS);
      expect(bytes).toBeGreaterThan(ROWS * 100);
    } finally {
      ch.streamRows = real;
    }
  }, 120_000);

  test('a read that fails midway cuts the response (the client gets an error, not a short file) and the log says why', async () => {
    const ch = env.app.clickhouse;
    const real = ch.streamRows.bind(ch);
    ch.streamRows = <T>(query: Parameters<ClickHouse['streamRows']>[0]) => ({
      async *[Symbol.asyncIterator]() {
        let rows = 0;
        for await (const row of real<T>(query)) {
          if (++rows > 30_000) throw new Error('ClickHouse went away (test)');
          yield row;
        }
      },
    });
    try {
      const response = await csvRequest(DAY);
      expect(response.status).toBe(200);
      await expect(response.text()).rejects.toThrow();
      const cut = logLines.find((line) =>
        line.includes(`reconciliation CSV of ${DAY} failed after 30000 rows`),
      );
      expect(cut).toBeDefined();
      expect(cut).toContain('ClickHouse went away (test)');
    } finally {
      ch.streamRows = real;
    }
  }, 60_000);

  test('a read that fails before the first row is an error answer, not a 200', async () => {
    const ch = env.app.clickhouse;
    const real = ch.streamRows.bind(ch);
    ch.streamRows = <T>(query: Parameters<ClickHouse['streamRows']>[0]) =>
      real<T>({
        ...query,
        query: query.query.replace('WHERE ledger_day', 'WHERE no_such_column = 1 AND ledger_day'),
      });
    try {
      const response = await csvRequest(DAY);
      expect(response.status).toBe(500);
      expect(await response.json()).toMatchObject({ error: 'internal' });
    } finally {
      ch.streamRows = real;
    }
  });

  test('a day with no verdicts is the header line alone; another day lists its own', async () => {
    expect(await (await csvRequest('2026-01-01')).text()).toBe(
      'ledger_day,movement_id,signature,status,ledger_amount_usd,chain_amount_usd,commitment,detail,checked_at\r\n',
    );
    const lines = (await (await csvRequest(OTHER_DAY)).text()).trimEnd().split('\r\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(',sig-other-day,missing,0.000005,0,,,');
  });
});

describe('the JSON report keeps its bound and says when it is cut', () => {
  test('past 100,000 exceptions: the first 100,000, has_more and where the rest is', async () => {
    const held = await heldByClickHouse(env.app.clickhouse, DAY);
    expect(held.exceptions).toBeGreaterThan(100_000);
    const response = await fetch(`${base}/api/v1/finance/reconciliation?date=${DAY}`, {
      headers: { authorization: `Bearer ${financeKey}` },
    });
    expect(response.status).toBe(200);
    const report = (await response.json()) as Record<string, any>;
    expect(report.exceptions).toHaveLength(100_000);
    expect(report.has_more).toBe(true);
    expect(report.message).toMatch(/more than 100000 exceptions.*text\/csv.*reconciliationExceptions/);
  }, 60_000);

  test('a day within the bound: every exception, has_more false and no message', async () => {
    const response = await fetch(`${base}/api/v1/finance/reconciliation?date=${OTHER_DAY}`, {
      headers: { authorization: `Bearer ${financeKey}` },
    });
    const report = (await response.json()) as Record<string, any>;
    expect(report.exceptions).toHaveLength(1);
    expect(report.has_more).toBe(false);
    expect(report).not.toHaveProperty('message');
  });
});
