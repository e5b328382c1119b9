import type { Writable } from 'node:stream';
import { csvRecord, jsonRecord } from '../../../domain/reports/report-format.js';

/** Text gathered before one write to the sink: few, large writes instead of one per row. */
const FLUSH_BYTES = 64 * 1024;

/**
 * Writes to the report's sink with backpressure: text is gathered into ~64 kB writes, and a write
 * the sink refuses (`write` answered false) waits for 'drain' before anything more is read from
 * ClickHouse (the caller awaits `flush`/`row`, and the stream it reads from is pulled only then).
 * An aborted `signal`, or the sink failing or closing, rejects the wait.
 */
export class ReportSink {
  private pending: string[] = [];
  private pendingBytes = 0;
  constructor(
    private readonly sink: Writable,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /** Adds text; writes out when enough has gathered. */
  async text(chunk: string): Promise<void> {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= FLUSH_BYTES) await this.flush();
  }

  /** Writes bytes as they are (Parquet), after any text gathered so far. */
  async bytes(chunk: Uint8Array): Promise<void> {
    await this.flush();
    await this.write(chunk);
  }

  /** Writes out what has gathered. */
  async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const text = this.pending.join('');
    this.pending = [];
    this.pendingBytes = 0;
    await this.write(Buffer.from(text, 'utf8'));
  }

  private async write(chunk: Uint8Array): Promise<void> {
    this.signal?.throwIfAborted();
    if (this.sink.destroyed || this.sink.writableEnded) throw new Error('the report sink is closed');
    if (this.sink.write(chunk)) return;
    await new Promise<void>((resolve, reject) => {
      const done = (error?: Error) => {
        this.sink.off('drain', onDrain);
        this.sink.off('error', onError);
        this.sink.off('close', onClose);
        this.signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve();
      };
      const onDrain = () => done();
      const onError = (error: Error) => done(error);
      const onClose = () => done(new Error('the report sink closed before the report was written'));
      const onAbort = () =>
        done(this.signal?.reason instanceof Error ? this.signal.reason : new Error('the report was aborted'));
      this.sink.once('drain', onDrain);
      this.sink.once('error', onError);
      this.sink.once('close', onClose);
      this.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** Prints rows in a text format: a CSV with a header record, or JSON Lines keyed by column. */
export interface RowPrinter {
  header(): string;
  row(values: readonly (string | null)[]): string;
}

export function rowPrinter(format: 'csv' | 'jsonl', columns: readonly string[]): RowPrinter {
  return format === 'csv'
    ? { header: () => csvRecord(columns), row: (values) => csvRecord(values.map((v) => v ?? '')) }
    : { header: () => '', row: (values) => jsonRecord(columns, values) };
}

/**
 * The positions of `columns` in a type's full row (`all`): a writer builds every column and picks
 * the asked ones in the asked order. An unknown column is a bug of the caller (the request parser
 * checks them).
 */
export function columnPicker(
  all: readonly string[],
  columns: readonly string[],
): (row: readonly (string | null)[]) => (string | null)[] {
  const indexes = columns.map((column) => {
    const i = all.indexOf(column);
    if (i < 0) throw new Error(`unknown report column "${column}"`);
    return i;
  });
  return (row) => indexes.map((i) => row[i] ?? null);
}
