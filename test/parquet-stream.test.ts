import { Writable } from 'node:stream';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { createClickHouse, type ClickHouse } from '../src/adapters/clickhouse/index.js';
import { ReportSink } from '../src/app/reports/report-writers/report-sink.js';
import { writeParquet } from '../src/app/reports/report-writers/report-query.js';
import {
  LEDGER_SLICE_MS,
  legSlices,
  sliceParams,
} from '../src/app/reports/report-writers/ledger-itemized.js';

// A Parquet file of several blocks and row groups must be ONE valid file (chdb's streamed
// FORMAT Parquet chunks are not: see the comment in clickhouse.ts).
let ch: ClickHouse;
let dir: string;
let engineTmp: string;
let sharedTmp: string | undefined;

beforeAll(async () => {
  const url = inject('clickhouseUrl');
  ch = createClickHouse(
    url
      ? { kind: 'http', url }
      : { kind: 'chdb', path: path.join(inject('dataRoot'), `chdb-${process.pid}`) },
    'default',
  );
  dir = await mkdtemp(path.join(tmpdir(), 'parquet-stream-test-'));
  // os.tmpdir() reads TMPDIR on each call: the adapter's temporary folders land in ours.
  engineTmp = await mkdtemp(path.join(tmpdir(), 'parquet-stream-engine-'));
  sharedTmp = process.env.TMPDIR;
  process.env.TMPDIR = engineTmp;
});

afterAll(async () => {
  if (sharedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = sharedTmp;
  await ch.close();
  await rm(dir, { recursive: true, force: true });
  await rm(engineTmp, { recursive: true, force: true });
});

async function parquetOf(rows: number): Promise<{ rowCount: number; bytes: Buffer }> {
  const parts: Buffer[] = [];
  const sink = new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _encoding, done) {
      parts.push(chunk);
      setImmediate(done); // a slow sink: writes wait for 'drain'
    },
  });
  const rowCount = await writeParquet(
    ch,
    new ReportSink(sink, undefined),
    { query: 'SELECT number AS n FROM numbers({rows:UInt64})', params: { rows } },
    [
      { name: 'n', sql: 'n' },
      { name: 's', sql: "concat('row-', toString(n))" },
    ],
    undefined,
  );
  return { rowCount, bytes: Buffer.concat(parts) };
}

async function one<T>(query: string, params: Record<string, unknown>): Promise<T> {
  const result = await ch.client.query({ query, query_params: params, format: 'JSONEachRow' });
  const rows = await result.json<T>();
  return rows[0] as T;
}

test('a Parquet file of 150,000 rows (many blocks, several row groups) reads back whole', async () => {
  const rows = 150_000;
  const { rowCount, bytes } = await parquetOf(rows);
  expect(rowCount).toBe(rows);
  expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
  expect(bytes.subarray(-4).toString()).toBe('PAR1');
  const file = path.join(dir, 'numbers.parquet');
  await writeFile(file, bytes);
  const read = await one<{ total: string; sum: string; strings: string; last: string }>(
    `SELECT count() AS total, sum(n) AS sum, countIf(s = concat('row-', toString(n))) AS strings, max(s) AS last
       FROM file({file:String}, 'Parquet')`,
    { file },
  );
  expect(read).toEqual({
    total: String(rows),
    sum: String((rows * (rows - 1)) / 2),
    strings: String(rows),
    last: 'row-99999',
  });
  const meta = await one<{ num_rows: string; num_row_groups: string }>(
    `SELECT num_rows, num_row_groups FROM file({file:String}, 'ParquetMetadata')`,
    { file },
  );
  expect(Number(meta.num_rows)).toBe(rows);
  if (!inject('clickhouseUrl')) expect(Number(meta.num_row_groups)).toBeGreaterThan(1);
  // The engine's temporary file is gone once the file has been read. Looked for in this file's own
  // temporary folder: other test files write Parquet reports into the shared one at the same time.
  expect((await readdir(engineTmp)).filter((name) => name.startsWith('ledgerfeed-parquet-'))).toEqual([]);
}, 60_000);

test('parts: on chdb the file holds the parts one after the other, in order (empty parts too)', async () => {
  const select = 'SELECT number AS n, toString(number) AS s FROM numbers({from:UInt64}, {count:UInt64})';
  const counts = [70_000, 0, 50_000, 1];
  let from = 0;
  const parts = counts.map((count) => {
    const part = { query: select, query_params: { from, count } };
    from += count;
    return part;
  });
  const chunks: Uint8Array[] = [];
  for await (const chunk of ch.streamBytes({
    query: select,
    query_params: { from: 0, count: from },
    format: 'Parquet',
    parts,
  }))
    chunks.push(chunk);
  const file = path.join(dir, 'parts.parquet');
  await writeFile(file, Buffer.concat(chunks));
  // Read back in the file's order: ClickHouse's Parquet reader decodes row groups in parallel and,
  // unless told to preserve it, hands them on in any order (54,592 rows out of place under load).
  const read = await one<{ total: string; sum: string; out_of_order: string }>(
    `SELECT count() AS total, sum(n) AS sum, countIf(n != rowNumberInAllBlocks()) AS out_of_order
       FROM file({file:String}, 'Parquet') SETTINGS max_threads = 1, input_format_parquet_preserve_order = 1`,
    { file },
  );
  expect(read).toEqual({ total: String(from), sum: String((from * (from - 1)) / 2), out_of_order: '0' });
}, 60_000);

test('ledger.itemized slices cover the interval in order, edge to edge', () => {
  const start = Date.UTC(2026, 9, 1);
  const end = Date.UTC(2026, 9, 2, 1, 30);
  const slices = sliceParams({ start: 'x', end: 'y', tz: 'UTC' }, start, end);
  expect(slices[0]?.start).toBe('2026-10-01 00:00:00.000');
  expect(slices.at(-1)?.end).toBe('2026-10-02 01:30:00.000');
  slices.slice(1).forEach((slice, i) => expect(slice.start).toBe(slices[i]?.end));
  expect(slices.every((slice) => slice.tz === 'UTC')).toBe(true);
  expect(slices.length).toBe(Math.ceil((end - start) / LEDGER_SLICE_MS));
});

test('ledger.itemized CSV slices hold at most the bound of legs, cut on 15-minute buckets', () => {
  const start = Date.UTC(2026, 9, 1, 0, 5);
  const end = Date.UTC(2026, 9, 1, 3);
  const q = 15 * 60_000;
  const bucket = (ms: number, n: number) => ({ b: String(Math.floor(ms / q)), n: String(n) });
  const buckets = [
    bucket(start, 10), // the bucket started before the interval: the first slice still starts at `start`
    bucket(start + q, 15),
    bucket(start + 3 * q, 30), // more than the bound alone: a slice of its own
    bucket(start + 5 * q, 5),
    bucket(start + 6 * q, 5),
  ];
  const slices = legSlices({ start: 'x', end: 'y', tz: 'UTC' }, start, end, buckets, 20);
  expect(slices.map((s) => [s.start, s.end])).toEqual([
    ['2026-10-01 00:05:00.000', '2026-10-01 00:15:00.000'],
    ['2026-10-01 00:15:00.000', '2026-10-01 00:45:00.000'],
    ['2026-10-01 00:45:00.000', '2026-10-01 01:15:00.000'],
    ['2026-10-01 01:15:00.000', '2026-10-01 03:00:00.000'],
  ]);
  expect(slices.every((slice) => slice.tz === 'UTC')).toBe(true);
  expect(legSlices({ tz: 'UTC' }, start, end, [], 20)).toEqual([
    { tz: 'UTC', start: '2026-10-01 00:05:00.000', end: '2026-10-01 03:00:00.000' },
  ]);
});
