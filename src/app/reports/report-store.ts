import type { Readable, Writable } from 'node:stream';

/**
 * Where report files live (issue 50): a folder under DATA_DIR by default
 * (src/adapters/files/fs-report-store.ts), an S3-compatible bucket when REPORT_S3_BUCKET is set
 * (src/adapters/files/s3-report-store.ts; what each guarantees: docs/reports.md).
 *
 * A key names one file for good: once a key holds a file it is never rewritten, so a run made
 * again after a crash (or a period closed with it) keeps the bytes whose sha256 was published.
 */
export interface ReportStore {
  /**
   * Hands `produce` a sink whose bytes go to a temporary file (or a multipart upload), hashed
   * (sha256) and counted as they pass; once `produce` resolves the file is made durable and moved to
   * `key` in one step (the folder store links it; the bucket completes the upload). When
   * `key` already holds a file (an earlier attempt of the same run got that far before it died),
   * that file stays and its own sha256 and size are answered. A rejected `produce` leaves nothing.
   */
  write<T>(key: string, produce: (sink: Writable) => Promise<T>): Promise<StoredReportFile<T>>;
  /** The file as a stream (never read whole), with its size; undefined when the key holds none. */
  open(key: string): Promise<{ stream: Readable; bytes: number } | undefined>;
}

export interface StoredReportFile<T> {
  /** What `produce` resolved with. */
  result: T;
  /** Bytes of the file at `key`. */
  bytes: number;
  /** sha256 of the file at `key`, lowercase hex. */
  sha256: string;
}
