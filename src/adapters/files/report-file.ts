import { createHash } from 'node:crypto';
import { Transform, type Readable, type TransformCallback, type Writable } from 'node:stream';

/**
 * What the report stores of this folder share (the folder store, fs-report-store.ts, and the
 * S3-compatible one, s3-report-store.ts): their shape, the rule for a key, and the counting sink.
 */

/**
 * The shape of src/app/reports/report-store.ts's ReportStore, which the stores have without
 * importing it (adapters do not import app/: the wiring passes them as one).
 */
export interface ReportFileStore {
  write<T>(
    key: string,
    produce: (sink: Writable) => Promise<T>,
  ): Promise<{ result: T; bytes: number; sha256: string }>;
  open(key: string): Promise<{ stream: Readable; bytes: number } | undefined>;
}

/** A key is one file name of ours (`<run id>.<ext>`): no folders, no dot files. */
const KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Throws unless `key` is a file key (see KEY). */
export function checkReportFileKey(key: string): void {
  if (!KEY.test(key)) throw new Error(`report store: ${JSON.stringify(key)} is not a file key`);
}

/**
 * Counts and hashes (sha256) the bytes that pass through it, unchanged: a store's sink, so a file's
 * size and sha256 are known once its last byte has passed, never by reading the file again.
 */
export class HashingCounter extends Transform {
  readonly hash = createHash('sha256');
  /** Bytes that have passed so far. */
  bytes = 0;
  override _transform(chunk: Buffer | string, encoding: BufferEncoding, done: TransformCallback): void {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk;
    this.hash.update(buffer);
    this.bytes += buffer.length;
    done(null, buffer);
  }
}

/** Size and sha256 (lowercase hex) of a stored file, read as a stream (an existing key's answer). */
export async function hashStream(
  source: AsyncIterable<Buffer | string>,
): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of source) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    hash.update(buffer);
    bytes += buffer.length;
  }
  return { bytes, sha256: hash.digest('hex') };
}
