import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { writeReport, type WrittenReport } from '../src/app/reports/write-report.js';
import { PARQUET_ROW_GROUP_ROWS } from '../src/adapters/clickhouse/clickhouse.js';
import { REPORT_COLUMNS, type ReportSpec } from '../src/domain/reports/report-kinds.js';
import { parseCsv } from './support/report-files.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

// account.statement in Parquet streams: its rows (the balance runs in JavaScript) go to a JSON
// Lines temporary file, not to memory, which chdb turns into the Parquet file. A statement of
// several row groups reads back with the CSV's exact rows, and the temporary folders are gone
// afterwards, also after an abort. On chdb only (over HTTP the rows go to a session's table).

const ROWS = 2 * PARQUET_ROW_GROUP_ROWS + 10_000;
const TIMEZONE = 'Asia/Kolkata';
const START = Date.UTC(2026, 9, 1, 12);

let env: TestEnv;
let engineTmp: string;
let dir: string;
let sharedTmp: string | undefined;
const accountId = randomUUID();

beforeAll(async () => {
  env = await openTestEnv();
  dir = await mkdtemp(path.join(tmpdir(), 'report-statement-parquet-test-'));
  // os.tmpdir() reads TMPDIR on each call: the adapter's temporary folders land in ours, where no
  // other test file writes Parquet at the same time.
  engineTmp = await mkdtemp(path.join(tmpdir(), 'report-statement-parquet-engine-'));
  sharedTmp = process.env.TMPDIR;
  process.env.TMPDIR = engineTmp;
  // One account's legs, each its own movement 10 ms apart (so the order is the time's), USDC and
  // native, positive and negative, half with a signature; two legs before the interval open it.
  const legs = env.app.clickhouse.table('ledger_legs');
  await env.app.clickhouse.client.command({
    query: `INSERT INTO ${legs} (leg_id, movement_id, movement_kind, account_kind, account_id, amount, counts,
                                 created_at, currency, swap_tx)
            SELECT number + 1, generateUUIDv4(number), if(number % 3 = 0, 'deposit', 'post'), 'user',
                   {account:UUID}, if(number % 3 = 0, toInt64(3000 + number % 1000), -toInt64(1000 + number % 7)),
                   '', fromUnixTimestamp64Milli(toInt64({start:Int64} + number * 10), 'UTC'),
                   if(number % 5 = 0, 'native', 'usdc'), if(number % 2 = 0, concat('sig', toString(number)), '')
              FROM numbers({rows:UInt64})`,
    query_params: { account: accountId, start: START, rows: ROWS },
  });
  await env.app.clickhouse.insertRows('ledger_legs', [
    opening(ROWS + 1, 'usdc', '5000000'),
    opening(ROWS + 2, 'native', '7000000000'),
  ]);
}, 120_000);

afterAll(async () => {
  if (sharedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = sharedTmp;
  await env?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (engineTmp) await rm(engineTmp, { recursive: true, force: true });
});

function opening(legId: number, currency: string, amount: string): Record<string, unknown> {
  return {
    leg_id: String(legId),
    movement_id: randomUUID(),
    movement_kind: 'deposit',
    account_kind: 'user',
    account_id: accountId,
    amount,
    counts: '',
    created_at: '2026-09-30 00:00:00.000',
    currency,
  };
}

/** A sink that takes each chunk a tick later (the writer waits for 'drain'), seeing every chunk. */
function slowSink(onChunk: (chunk: Buffer) => void = () => undefined): Writable & { chunks: Buffer[] } {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      onChunk(chunk);
      setImmediate(done);
    },
  });
  return Object.assign(sink, { chunks });
}

const spec = (format: ReportSpec['format']): ReportSpec => ({
  type: 'account.statement',
  intervalStart: new Date(START),
  intervalEnd: new Date(START + 3_600_000),
  timezone: TIMEZONE,
  columns: REPORT_COLUMNS['account.statement'],
  format,
  accountId,
});

const write = (format: ReportSpec['format'], sink: Writable, signal?: AbortSignal): Promise<WrittenReport> =>
  writeReport({ clickhouse: env.app.clickhouse, db: env.app.db }, spec(format), sink, signal);

/** What the statement's writers left in the temporary folder. */
const leftovers = async () => (await readdir(engineTmp)).filter((name) => name.startsWith('ledgerfeed-'));

async function query<T>(sql: string, params: Record<string, unknown>): Promise<T[]> {
  const result = await env.app.clickhouse.client.query({
    query: sql,
    query_params: params,
    format: 'JSONEachRow',
  });
  return result.json<T>();
}

test.skipIf(!!inject('clickhouseUrl'))(
  'a statement of several row groups streams its Parquet through a JSON Lines file: the rows of the CSV, in order',
  async () => {
    const csvSink = slowSink();
    const csv = await write('csv', csvSink);
    const records = parseCsv(Buffer.concat(csvSink.chunks).toString('utf8'));
    expect(records[0]).toEqual(REPORT_COLUMNS['account.statement']);
    expect(csv.rowCount).toBe(ROWS);

    // While the Parquet file reaches the sink, the rows are a JSON Lines file on disk.
    let jsonlBytes = -1;
    const pending: Promise<void>[] = [];
    const parquetSink = slowSink(() => {
      if (pending.length > 0) return;
      pending.push(
        (async () => {
          const [rowsDir] = (await leftovers()).filter((name) => name.startsWith('ledgerfeed-parquet-rows-'));
          jsonlBytes = rowsDir ? (await stat(path.join(engineTmp, rowsDir, 'rows.jsonl'))).size : 0;
        })(),
      );
    });
    const parquet = await write('parquet', parquetSink);
    await Promise.all(pending);
    expect(jsonlBytes).toBeGreaterThan(ROWS * 100);
    expect(parquetSink.chunks.length).toBeGreaterThan(1);
    expect(parquet.rowCount).toBe(csv.rowCount);
    expect(parquet.summary).toEqual(csv.summary);
    expect(await leftovers()).toEqual([]);

    const file = path.join(dir, 'statement.parquet');
    await writeFile(file, Buffer.concat(parquetSink.chunks));
    const [meta] = await query<{ num_rows: string; num_row_groups: string }>(
      `SELECT num_rows, num_row_groups FROM file({file:String}, 'ParquetMetadata')`,
      { file },
    );
    expect(Number(meta?.num_rows)).toBe(ROWS);
    expect(Number(meta?.num_row_groups)).toBeGreaterThan(2);
    // Every row, in the file's order, equal to the CSV's (times as instants; null for an empty cell).
    const rows = await query<Record<string, string | null>>(
      `SELECT toString(toUnixTimestamp64Milli(created_at)) AS ms, currency, type,
              amount, balance_after, description, swap_tx, status, toString(related_post_id) AS related_post_id,
              counterparty
         FROM file({file:String}, 'Parquet') SETTINGS max_threads = 1, input_format_parquet_preserve_order = 1`,
      { file },
    );
    expect(rows).toHaveLength(ROWS);
    const columns = REPORT_COLUMNS['account.statement'];
    const asCsv = rows.map((row) => [
      new Date(Number(row.ms)).toISOString(),
      ...columns.slice(1).map((column) => row[column] ?? ''),
    ]);
    const expected = records
      .slice(1)
      .map((record) => [new Date(record[0]!).toISOString(), ...record.slice(1)]);
    // Compared in slices: one toEqual over 140k rows prints an unreadable diff.
    for (let i = 0; i < ROWS; i += 10_000) {
      expect(asCsv.slice(i, i + 10_000), `rows ${i}..`).toEqual(expected.slice(i, i + 10_000));
    }
  },
  180_000,
);

test.skipIf(!!inject('clickhouseUrl'))(
  'an abort while the rows are written, or while the Parquet file is read, leaves no temporary folder',
  async () => {
    // While the JSON Lines are written: aborted once the rows file has grown.
    const whileWriting = new AbortController();
    const poll = setInterval(() => {
      void (async () => {
        const [rowsDir] = await leftovers();
        const size = rowsDir
          ? await stat(path.join(engineTmp, rowsDir, 'rows.jsonl')).then(
              (s) => s.size,
              () => 0,
            )
          : 0;
        if (size > 1024 * 1024) whileWriting.abort(new Error('aborted while writing'));
      })();
    }, 5);
    try {
      await expect(write('parquet', slowSink(), whileWriting.signal)).rejects.toThrow(
        'aborted while writing',
      );
    } finally {
      clearInterval(poll);
    }
    expect(await leftovers()).toEqual([]);

    // While the Parquet file streams: aborted at its first chunk.
    const whileReading = new AbortController();
    const sink = slowSink(() => whileReading.abort(new Error('aborted while reading')));
    await expect(write('parquet', sink, whileReading.signal)).rejects.toThrow('aborted while reading');
    expect(sink.chunks).toHaveLength(1);
    expect(await leftovers()).toEqual([]);
  },
  180_000,
);

test('a rows writer that stops with writes still buffered rejects, and nothing fails later', async () => {
  // Four 4 MB writes queued at once, then the writer stops (as a report aborted mid-write does):
  // the file stream is destroyed with writes in flight. Before, the next fs callback raised
  // ERR_STREAM_DESTROYED as an uncaught exception (it ended a CI run).
  const chunk = Buffer.alloc(4 * 1024 * 1024, 0x20);
  const read = async () => {
    for await (const bytes of env.app.clickhouse.streamParquetOfRows({
      rows: {
        structure: 'a String',
        write: async (input) => {
          // The file is open and written to (destroying a stream that has not opened yet has
          // nothing in flight), then a burst, then the stop.
          if (!input.write(chunk)) await once(input, 'drain');
          for (let i = 0; i < 4; i++) input.write(chunk);
          throw new Error('the writer stopped');
        },
      },
      projection: 'a',
    }))
      void bytes;
  };
  for (let round = 0; round < 5; round++) {
    await expect(read()).rejects.toThrow('the writer stopped');
  }
  // The fs callbacks of the writes that were in flight have landed by now.
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(await leftovers()).toEqual([]);
});
