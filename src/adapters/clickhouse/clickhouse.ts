import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable, type Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import {
  createClient,
  EXCEPTION_TAG_HEADER_NAME,
  extractErrorAtTheEndOfChunk,
  type ClickHouseClient,
} from '@clickhouse/client';
import { Session } from 'chdb';
import { createChdbConnection } from 'chdb/connection';

/** Where ClickHouse lives: a server over HTTP, or chdb inside this process on a folder. */
export type ClickHouseTarget =
  { readonly kind: 'http'; readonly url: string } | { readonly kind: 'chdb'; readonly path: string };

/**
 * A ClickHouse client bound to one database. chdb's connection ignores the client's `database`
 * option, so every statement names its tables through `table()`; the same SQL then runs on chdb
 * and on a ClickHouse server.
 */
export interface ClickHouse {
  readonly client: ClickHouseClient;
  readonly database: string;
  /** False for the stand-in of a process without ClickHouse (unconfigured-clickhouse.ts). */
  readonly configured: boolean;
  /** Backquoted `database`.`name`. */
  table(name: string): string;
  /** Inserts rows (JSONEachRow: 64-bit integers as strings) into a table of this database. */
  insertRows(table: string, rows: ReadonlyArray<Record<string, unknown>>): Promise<void>;
  /**
   * Inserts rows already encoded as TabSeparated text (one line each, `\N` for NULL, backslash
   * escapes): bulk copies whose text another system wrote, with no JavaScript object per row.
   */
  insertTabSeparated(table: string, columns: readonly string[], body: string): Promise<void>;
  /**
   * Runs a SELECT (no FORMAT clause) and yields its rows one by one as JSONEachRow objects (64-bit
   * integers as strings), reading the next block only when the consumer asks for it: a slow
   * consumer pauses the read, `break` (or `return()`) cancels it, and nothing holds the result
   * whole. An error, at the start or midway, is thrown from the iteration.
   */
  streamRows<T>(query: StreamQuery): AsyncIterable<T>;
  /**
   * As `streamRows`, but the raw bytes of the result in `format` (the bytes ClickHouse writes,
   * e.g. `CSVWithNames` or `Parquet`), chunk by chunk. A read that fails midway throws, also over
   * HTTP where the server writes its exception into the body (the client checks the tag).
   * `parts` (Parquet only): on chdb the file holds the rows of these SELECTs (same columns), one
   * after the other in order, each run on its own (bounded slices of `query`); a server runs
   * `query` (its memory is not this process's).
   */
  streamBytes(
    query: StreamQuery & { format: StreamFormat; parts?: readonly StreamQuery[] },
  ): AsyncIterable<Uint8Array>;
  /**
   * A Parquet file of rows this process computes (in no table), with bounded memory in this
   * process: the rows go to the engine as JSON Lines while `rows.write` writes them, then the
   * engine writes the Parquet file of `SELECT <projection>` over them, in the order written, and
   * its bytes are yielded chunk by chunk as in `streamBytes`. On chdb through a temporary file
   * (chdbParquetOfRows), over HTTP through a session's temporary table (httpParquetOfRows).
   */
  streamParquetOfRows(query: RowsParquetQuery): AsyncIterable<Uint8Array>;
  close(): Promise<void>;
}

/** See `ClickHouse.streamParquetOfRows`. */
export interface RowsParquetQuery {
  rows: {
    /** The rows' columns and types, as ClickHouse's structure (`a String, b Nullable(UUID)`). */
    structure: string;
    /**
     * Writes every row as one JSONEachRow line into `input`, awaiting its backpressure (a
     * ReportSink over it does), and resolves when all are written; the adapter ends `input`.
     */
    write(input: Writable): Promise<void>;
  };
  /** The file's columns: a SELECT list over the rows' columns (`{name:Type}` parameters allowed). */
  projection: string;
  query_params?: Record<string, unknown>;
  /** Cancels the write and the read (the iteration then throws). */
  abort_signal?: AbortSignal;
}

/** A streamed SELECT: SQL without FORMAT, `{name:Type}` parameters as in `client.query`. */
export interface StreamQuery {
  query: string;
  query_params?: Record<string, unknown>;
  /** Cancels the read (the iteration then throws). */
  abort_signal?: AbortSignal;
}

/** Output formats `streamBytes` is used with (checked on chdb 3.4 / ClickHouse 26.7). */
export type StreamFormat =
  'CSVWithNames' | 'TabSeparatedWithNames' | 'TabSeparatedRaw' | 'JSONEachRow' | 'Parquet';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function createClickHouse(target: ClickHouseTarget, database: string): ClickHouse {
  if (!IDENTIFIER.test(database)) throw new Error(`invalid ClickHouse database name: ${database}`);
  const settings = {
    // 64-bit integers (micro-USD amounts) as JSON strings, never as lossy doubles. A server
    // defaults to this; chdb does not.
    output_format_json_quote_64bit_integers: 1,
  } as const;
  const client =
    target.kind === 'http'
      ? createClient({ url: target.url, clickhouse_settings: settings, request_timeout: 30_000 })
      : createClient({ connection: chdbConnection(target.path), clickhouse_settings: settings });
  const table = (name: string) => {
    if (!IDENTIFIER.test(name)) throw new Error(`invalid ClickHouse table name: ${name}`);
    return `\`${database}\`.\`${name}\``;
  };
  return {
    client,
    database,
    configured: true,
    table,
    insertRows: async (name, rows) => {
      if (rows.length === 0) return;
      await client.insert({ table: table(name), format: 'JSONEachRow', values: [...rows] });
    },
    insertTabSeparated: async (name, columns, body) => {
      if (body.length === 0) return;
      await client.insert({
        table: table(name),
        format: 'TabSeparated',
        values: Readable.from([Buffer.from(body)], { objectMode: false }),
        columns: [...columns] as [string, ...string[]],
      });
    },
    streamRows: <T>(query: StreamQuery) =>
      target.kind === 'http' ? httpRows<T>(client, query) : chdbRows<T>(target.path, query),
    streamBytes: (query) =>
      target.kind === 'http' ? httpBytes(client, query) : chdbBytes(target.path, query),
    streamParquetOfRows: (query) =>
      target.kind === 'http' ? httpParquetOfRows(client, query) : chdbParquetOfRows(target.path, query),
    close: () => client.close(),
  };
}

/*
 * Streaming, and what @clickhouse/client over chdb supports (chdb 3.4.0, @clickhouse/client 1.23,
 * measured 2026-11):
 *
 * - chdb's Connection (`chdb/connection`) MATERIALIZES every result: `query` and `exec` run the
 *   statement to the end (Session.queryAsync) and hand @clickhouse/client one Buffer as a one-shot
 *   Readable. `client.query(...).stream()` and `client.exec(...)` therefore work (same API, same
 *   formats) but hold the whole result in memory: 1M reconciliation rows as JSONEachRow were a
 *   314 MB Buffer and the process grew by ~1.8 GB. No backpressure reaches the engine.
 * - Real streaming on chdb is chdb's own `Session.queryStreamBind(sql, params, { format })`: an
 *   async iterable of chunks (one engine block each, ~max_block_size rows), each fetched on a libuv
 *   thread only when the iterator is pulled, cancelled on `break`/`return()`. Only one stream may
 *   be open per Session, and ChdbConnection keeps its Session private (its `.chdb.queryStream`
 *   escape hatch has no parameter binding), so each stream opens its own Session on the same
 *   folder: chdb allows N connections to the one data folder bound in a process (they share the
 *   engine), opening one costs well under a millisecond. Settings the client sends as
 *   `clickhouse_settings` are passed as connection arguments instead.
 * - The engine runs inside this process on chdb, so its working set counts in the process RSS: a
 *   streamed read should keep it small with `SETTINGS max_threads = 1, max_block_size = 8192` and
 *   an ORDER BY that is the table's sorting key (read in order, no sort). Measured on 1M rows (10
 *   parts) with FINAL: +140-150 MB flat from the first block on; ordering DESC (a full sort) or
 *   the default threads/blocks: +270-590 MB.
 * - `FORMAT Parquet` must NOT be streamed on chdb: `queryStreamBind(..., { format: 'Parquet' })`
 *   writes each block as a Parquet file of its own, so its chunks do not concatenate into one valid
 *   file (20,000 rows: the footer said 3,616 rows, the data did not decode). chdbParquet below has
 *   the engine write the file itself (`INSERT INTO FUNCTION file(<temp path>, 'Parquet') SELECT`,
 *   row groups of PARQUET_ROW_GROUP_ROWS, so memory stays bounded) and then streams that file.
 *   `CSVWithNames`, `TabSeparatedWithNames`, `JSONEachRow` do stream chunk by chunk (the header
 *   only in the first chunk). Over HTTP a server's `FORMAT Parquet` body is one valid file.
 * - Over HTTP (CLICKHOUSE_URL) `client.query(...).stream()` / `client.exec` stream from the socket
 *   with backpressure. A server (25.11+) that fails midway writes `__exception__` and the tag of
 *   the `x-clickhouse-exception-tag` header at the end of the body: ResultSet.stream() turns it
 *   into an error for JSONEachRow, and httpBytes below checks the tail of raw formats.
 */

/**
 * The SETTINGS clause of a streamed read: one thread and 8,192-row blocks keep the engine's working
 * set small (on chdb it is this process's memory; see the notes above). Append more with `, `.
 */
export const STREAM_SETTINGS = 'SETTINGS max_threads = 1, max_block_size = 8192';

const STREAM_CONNECTION_ARGS = ['--output_format_json_quote_64bit_integers=1'];

async function* chdbChunks(path: string, query: StreamQuery, format: string): AsyncGenerator<Uint8Array> {
  const session = new Session(path, { connectionArgs: STREAM_CONNECTION_ARGS });
  try {
    const stream = session.queryStreamBind(query.query, query.query_params ?? {}, {
      format,
      ...(query.abort_signal ? { signal: query.abort_signal } : {}),
    });
    try {
      for await (const chunk of stream) yield chunk.raw();
    } finally {
      stream.cancel();
    }
  } finally {
    session.close();
  }
}

async function* chdbRows<T>(path: string, query: StreamQuery): AsyncGenerator<T> {
  for await (const chunk of chdbChunks(path, query, 'JSONEachRow')) yield* jsonLines<T>(chunk);
}

function chdbBytes(
  path: string,
  query: StreamQuery & { format: StreamFormat; parts?: readonly StreamQuery[] },
): AsyncGenerator<Uint8Array> {
  return query.format === 'Parquet' ? chdbParquet(path, query) : chdbChunks(path, query, query.format);
}

/** Rows per Parquet row group the engine writes on chdb (bounds what it holds while writing). */
export const PARQUET_ROW_GROUP_ROWS = 65_536;
const PARQUET_CONNECTION_ARGS = [
  ...STREAM_CONNECTION_ARGS,
  `--output_format_parquet_row_group_size=${PARQUET_ROW_GROUP_ROWS}`,
  `--output_format_parquet_row_group_size_bytes=${16 * 1024 * 1024}`,
  '--output_format_parquet_parallel_encoding=0',
];

/**
 * Parquet on chdb: the engine writes the whole file into a fresh temporary folder (one statement,
 * row group by row group), then the file is read back in 1 MB chunks, pulled by the consumer, and
 * removed (also when the consumer stops early or the write fails). With `parts`, each part is
 * appended in order to a Native file first (Native appends; Parquet cannot), which one statement
 * then turns into the Parquet file, read in order by one thread, with read() (the default mmap put
 * the whole Native file in the process RSS: 2M rows, +446 MB; with read(), ~+80 MB).
 */
async function* chdbParquet(
  path: string,
  query: StreamQuery & { parts?: readonly StreamQuery[] },
): AsyncGenerator<Uint8Array> {
  const dir = await mkdtemp(join(tmpdir(), 'ledgerfeed-parquet-'));
  try {
    const file = join(dir, 'report.parquet');
    const session = new Session(path, { connectionArgs: PARQUET_CONNECTION_ARGS });
    const run = async (sql: string, params: Record<string, unknown>) => {
      query.abort_signal?.throwIfAborted();
      await session.queryBindAsync(sql, params, query.abort_signal ? { signal: query.abort_signal } : {});
    };
    try {
      const native = join(dir, 'rows.native');
      for (const part of query.parts ?? []) {
        await run(`INSERT INTO FUNCTION file({__native_file:String}, 'Native') ${part.query}`, {
          ...part.query_params,
          __native_file: native,
        });
      }
      if (query.parts && (await stat(native).catch(() => null))) {
        await run(
          `INSERT INTO FUNCTION file({__parquet_file:String}, 'Parquet')
           SELECT * FROM file({__native_file:String}, 'Native')
           ${STREAM_SETTINGS}, input_format_parallel_parsing = 0,
                    storage_file_read_method = 'read', output_format_parquet_string_as_string = 1`,
          { __native_file: native, __parquet_file: file },
        );
        await rm(native, { force: true });
      } else {
        // No parts, or none had a row: the one query writes the file (with its columns).
        await run(`INSERT INTO FUNCTION file({__parquet_file:String}, 'Parquet') ${query.query}`, {
          ...query.query_params,
          __parquet_file: file,
        });
      }
    } finally {
      session.close();
    }
    query.abort_signal?.throwIfAborted();
    const stream = createReadStream(file, { highWaterMark: 1024 * 1024 });
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        query.abort_signal?.throwIfAborted();
        yield chunk;
      }
    } finally {
      stream.destroy();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The settings of a Parquet SELECT over rows read from a JSON Lines file (chdb) or table (HTTP). */
const ROWS_PARQUET_SETTINGS = `${STREAM_SETTINGS}, output_format_parquet_string_as_string = 1`;

/**
 * streamParquetOfRows on chdb: the rows are written to a JSON Lines file in a fresh temporary
 * folder (the writer waits for the file stream's 'drain', so they never gather in memory), which
 * chdbParquet then has the engine turn into the Parquet file, reading the JSON Lines in order with
 * one thread, read() and no parallel parsing (the settings of its Native parts, see there). The
 * folder goes in a finally: after the file was read, and when the write, the conversion or the
 * read fails or is aborted.
 */
async function* chdbParquetOfRows(path: string, query: RowsParquetQuery): AsyncGenerator<Uint8Array> {
  const dir = await mkdtemp(join(tmpdir(), 'ledgerfeed-parquet-rows-'));
  try {
    const file = join(dir, 'rows.jsonl');
    const input = createWriteStream(file);
    // An error nobody is waiting on (a buffered write landing after an abort destroyed the stream,
    // a full disk between two waits) would otherwise be an uncaught exception that ends the
    // process: it is kept and thrown here instead.
    let failed: Error | undefined;
    input.on('error', (error) => {
      failed ??= error;
    });
    try {
      await query.rows.write(input);
      if (failed) throw failed;
      input.end();
      await finished(input);
    } finally {
      input.destroy();
    }
    query.abort_signal?.throwIfAborted();
    yield* chdbParquet(path, {
      query: `SELECT ${query.projection}
                FROM file({__rows_file:String}, 'JSONEachRow', {__rows_structure:String})
              ${ROWS_PARQUET_SETTINGS}, input_format_parallel_parsing = 0, storage_file_read_method = 'read'`,
      query_params: { ...query.query_params, __rows_file: file, __rows_structure: query.rows.structure },
      ...(query.abort_signal ? { abort_signal: query.abort_signal } : {}),
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * streamParquetOfRows over HTTP (a ClickHouse server; NOT exercised by the tests here, which run
 * on chdb: see docs/reports.md). `file()` would be the server's disk, so the rows go into a
 * temporary Memory table of a session of our own, streamed as the body of one INSERT while
 * `rows.write` writes them (a PassThrough: the writer waits for the socket), and the Parquet is
 * the server's `SELECT ... FORMAT Parquet` body, streamed as in httpBytes. The rows are held by
 * the server (its memory, not this process's) until the session drops the table; a session is
 * one server's, so CLICKHOUSE_URL must not balance a session's requests over several servers.
 */
async function* httpParquetOfRows(
  client: ClickHouseClient,
  query: RowsParquetQuery,
): AsyncGenerator<Uint8Array> {
  const session_id = `ledgerfeed-rows-${randomUUID()}`;
  const abort = query.abort_signal ? { abort_signal: query.abort_signal } : {};
  await client.command({
    query: `CREATE TEMPORARY TABLE rows_input (${query.rows.structure}) ENGINE = Memory`,
    session_id,
    ...abort,
  });
  try {
    const input = new PassThrough();
    // Destroyed with the server's error below: kept from becoming an uncaught exception (the
    // writer's wait for 'drain' ends with the stream's 'close', and `inserted` rejects).
    input.on('error', () => {});
    const inserted = client
      .exec({ query: 'INSERT INTO rows_input FORMAT JSONEachRow', values: input, session_id, ...abort })
      .then(async (result) => {
        result.stream.resume();
        await finished(result.stream);
      });
    // A server that answers (fails) before the body ends stops reading it: the writer's wait for
    // 'drain' then ends with the stream's 'close' instead of hanging.
    inserted.catch((error: unknown) =>
      input.destroy(error instanceof Error ? error : new Error(String(error))),
    );
    try {
      await query.rows.write(input);
      input.end();
    } catch (error) {
      input.destroy();
      await inserted.catch(() => undefined);
      throw error;
    }
    await inserted;
    yield* httpBytes(client, {
      query: `SELECT ${query.projection} FROM rows_input ${ROWS_PARQUET_SETTINGS}`,
      query_params: query.query_params ?? {},
      format: 'Parquet',
      session_id,
      ...abort,
    });
  } finally {
    // Best effort: the session's table also goes when the session expires (a read cut off
    // midway may still hold the session for a moment, which refuses this statement).
    await client
      .command({ query: 'DROP TEMPORARY TABLE IF EXISTS rows_input', session_id })
      .catch(() => undefined);
  }
}

/**
 * A JSONEachRow chunk from chdb: whole rows, one per line. Each line is decoded on its own (a
 * newline byte is never part of a multi-byte UTF-8 character): decoding the whole chunk made one
 * multi-MB string per block, which V8 keeps in large-object space until a full GC.
 */
function* jsonLines<T>(chunk: Uint8Array): Generator<T> {
  const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  let start = 0;
  while (start < bytes.length) {
    let end = bytes.indexOf(10, start);
    if (end === -1) end = bytes.length;
    if (end > start) yield JSON.parse(bytes.toString('utf8', start, end)) as T;
    start = end + 1;
  }
}

async function* httpRows<T>(client: ClickHouseClient, query: StreamQuery): AsyncGenerator<T> {
  const result = await client.query({ ...query, format: 'JSONEachRow' });
  const stream = result.stream<T>();
  for await (const rows of stream) {
    for (const row of rows) yield row.json();
  }
}

async function* httpBytes(
  client: ClickHouseClient,
  query: StreamQuery & { format: StreamFormat; session_id?: string },
): AsyncGenerator<Uint8Array> {
  const { format, ...rest } = query;
  const result = await client.exec({ ...rest, query: `${query.query}\nFORMAT ${format}` });
  const header = result.response_headers[EXCEPTION_TAG_HEADER_NAME];
  const tag = Array.isArray(header) ? header[0] : header;
  // The server marks an exception at the very end of the body: hold the last bytes back until the
  // body ends, so a failed read never looks like a complete one.
  const marker = tag === undefined ? 0 : `__exception__\r\n${tag}\r\n`.length + 1;
  let held: Buffer = Buffer.alloc(0);
  for await (const chunk of result.stream as AsyncIterable<Buffer>) {
    const joined = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
    // Enough is kept back to find the marker and the error message before it.
    const keep = Math.min(joined.length, marker === 0 ? 0 : marker + 64 * 1024);
    if (joined.length > keep) yield joined.subarray(0, joined.length - keep);
    held = joined.subarray(joined.length - keep);
  }
  if (tag !== undefined && held.toString('latin1').endsWith(`__exception__\r\n${tag}\r\n`)) {
    throw extractErrorAtTheEndOfChunk(held, tag);
  }
  if (held.length > 0) yield held;
}

type ClientConnection = NonNullable<Parameters<typeof createClient>[0]>['connection'];

/**
 * chdb implements the Connection interface of @clickhouse/client-common, which @clickhouse/client
 * also bundles as its own copy: structurally the same, nominally two types.
 */
function chdbConnection(path: string): ClientConnection {
  return createChdbConnection({ path }) as unknown as ClientConnection;
}
