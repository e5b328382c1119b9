import { setTimeout as sleep } from 'node:timers/promises';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { checkReportFileKey, hashStream, HashingCounter, type ReportFileStore } from './report-file.js';

export interface S3ClientSettings {
  /** The bucket's region (S3-compatible services often take any, e.g. `us-east-1` or `auto`). */
  region: string;
  /** An S3-compatible service's URL; unset: AWS S3. Set, requests are path-style (`<endpoint>/<bucket>/<key>`). */
  endpoint?: string;
  /** Unset: the AWS SDK's default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, a role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** The client of the report bucket (one per process; `destroy()` it on close). */
export function createS3Client(settings: S3ClientSettings): S3Client {
  return new S3Client({
    region: settings.region,
    ...(settings.endpoint ? { endpoint: settings.endpoint, forcePathStyle: true } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
  });
}

export interface S3ReportStoreOptions {
  client: S3Client;
  bucket: string;
  /** Put before every key (`reports/` makes `reports/<run id>.csv`). @defaultValue '' */
  prefix?: string;
  /**
   * Bytes of every part of a multipart upload but the last: S3 takes 5 MiB at least and 10,000
   * parts at most, so 8 MiB parts hold files up to 78 GiB. A file smaller than one part is one PUT.
   * @defaultValue 8 MiB
   */
  partBytes?: number;
  /**
   * Parts uploading at once. A write holds this many parts, the one being filled and what the HTTP
   * client has not let go of yet: about `(partsInFlight + 3) * partBytes` measured, whatever the
   * file's size (test/s3-report-store.test.ts).
   * @defaultValue 4
   */
  partsInFlight?: number;
  /** How long a write that met a concurrent write of its key (409) waits for that one's object. @defaultValue 30000 */
  conflictWaitMs?: number;
}

const MIB = 1024 * 1024;
const MIN_PART_BYTES = 5 * MIB;

/** Answers of S3 that say the object (or upload) is not there, or that a condition held. */
const statusOf = (error: unknown): number | undefined =>
  (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;

/**
 * Report files in an S3-compatible bucket, with the folder store's guarantees where the server
 * gives them:
 *
 * - A write streams: the sink's bytes are hashed and counted as they pass (HashingCounter) and cut
 *   into parts of `partBytes`, each uploaded (UploadPart) while the next fills, at most
 *   `partsInFlight` at once; the sink waits (backpressure) while that many are in flight. The file is
 *   never whole in memory. A file smaller than one part is a single PutObject.
 * - A rejected `produce` (or a failed part) aborts the multipart upload: nothing is left, no object
 *   and no upload holding parts. A process killed mid-write leaves its upload pending (invisible to
 *   readers, but its parts are stored and billed): give the bucket a lifecycle rule that aborts
 *   incomplete multipart uploads after a day (docs/reports.md).
 * - A key is never rewritten. Before completing, the store asks whether the key holds an object
 *   (HeadObject) and, if it does, aborts its own upload and answers that object's size and sha256
 *   (read back as a stream). The completion (or the single PUT) is also sent with `If-None-Match: *`,
 *   so on a server with conditional writes (AWS S3 since August 2024, and others) the first attempt
 *   to complete wins even when two complete at once: the second gets 412 and answers the first's
 *   file (a 409 from a completion racing another is answered the same once that one's object shows).
 *   On a server that ignores the header (the one the tests run against, fauxqs) only the HEAD check
 *   holds: two attempts completing within the same moment could both write, the last one's bytes
 *   staying. Report runs of one id are serialised by the run's lease, so that needs a lease lost
 *   mid-completion.
 * - `open` is a GET whose body is handed on as a stream, with its Content-Length.
 */
export function createS3ReportStore(options: S3ReportStoreOptions): ReportFileStore {
  const { client, bucket } = options;
  const prefix = options.prefix ?? '';
  const partBytes = options.partBytes ?? 8 * MIB;
  const partsInFlight = options.partsInFlight ?? 4;
  const conflictWaitMs = options.conflictWaitMs ?? 30_000;
  if (partBytes < MIN_PART_BYTES)
    throw new Error(`report store: parts of ${partBytes} bytes are below S3's 5 MiB`);
  if (!Number.isInteger(partsInFlight) || partsInFlight < 1)
    throw new Error('report store: partsInFlight >= 1');

  const objectKeyOf = (key: string) => {
    checkReportFileKey(key);
    return `${prefix}${key}`;
  };

  async function exists(objectKey: string): Promise<boolean> {
    try {
      await client.send(new HeadObjectCommand({ Bucket: bucket, Key: objectKey }));
      return true;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw error;
    }
  }

  /** The stored object's size and sha256, read as a stream. */
  async function hashObject(objectKey: string): Promise<{ bytes: number; sha256: string }> {
    const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: objectKey }));
    return hashStream(bodyOf(got.Body));
  }

  /** After a 409 (another completion of the key at the same moment): that one's object, once it shows. */
  async function awaitOthersObject(objectKey: string, conflict: unknown): Promise<void> {
    for (const deadline = Date.now() + conflictWaitMs; Date.now() < deadline; await sleep(500)) {
      if (await exists(objectKey)) return;
    }
    throw new Error(`report store: ${objectKey} met a concurrent write that never finished`, {
      cause: conflict,
    });
  }

  /**
   * The parts of one write. The multipart upload begins with the first full part, so a small file
   * is one PUT; `parts` is filled in part-number order as each one's ETag comes back.
   */
  function partUploader(objectKey: string) {
    let uploadId: string | undefined;
    const parts: CompletedPart[] = [];
    const inFlight = new Set<Promise<void>>();
    let tail = Buffer.alloc(0);

    async function send(body: Buffer): Promise<void> {
      uploadId ??= (await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: objectKey })))
        .UploadId;
      if (!uploadId) throw new Error('report store: CreateMultipartUpload answered no UploadId');
      // A free slot first: the caller allocates the next part only after this resolves.
      while (inFlight.size >= partsInFlight) await Promise.race(inFlight);
      const partNumber = parts.length + 1;
      parts.push({ PartNumber: partNumber });
      const upload = client
        .send(
          new UploadPartCommand({
            Bucket: bucket,
            Key: objectKey,
            UploadId: uploadId,
            PartNumber: partNumber,
            Body: body,
            ContentLength: body.length,
          }),
        )
        .then((answer) => {
          parts[partNumber - 1] = { PartNumber: partNumber, ETag: answer.ETag };
        });
      const tracked: Promise<void> = upload.finally(() => inFlight.delete(tracked));
      tracked.catch(() => {}); // observed by the race above, or by settle()
      inFlight.add(tracked);
    }

    return {
      /** The pipeline's last stage: fills parts of `partBytes` and sends each as it fills. */
      async consume(source: AsyncIterable<Buffer>): Promise<void> {
        let part = Buffer.allocUnsafe(partBytes);
        let filled = 0;
        for await (const chunk of source) {
          for (let offset = 0; offset < chunk.length;) {
            const taken = chunk.copy(part, filled, offset);
            filled += taken;
            offset += taken;
            if (filled === partBytes) {
              await send(part);
              part = Buffer.allocUnsafe(partBytes);
              filled = 0;
            }
          }
        }
        tail = part.subarray(0, filled);
      },
      get multipart() {
        return uploadId !== undefined;
      },
      /** The last part, then every part's answer. */
      async finish(): Promise<CompletedPart[]> {
        if (tail.length > 0) await send(tail);
        await Promise.all(inFlight);
        return parts;
      },
      tail: () => tail,
      uploadId: () => uploadId,
      /** Waits for the parts in flight (a part landing after the abort would be kept), then aborts. */
      async abort(): Promise<void> {
        await Promise.allSettled(inFlight);
        if (uploadId === undefined) return;
        await client.send(
          new AbortMultipartUploadCommand({ Bucket: bucket, Key: objectKey, UploadId: uploadId }),
        );
      },
    };
  }

  return {
    async write<T>(key: string, produce: (sink: Writable) => Promise<T>) {
      const objectKey = objectKeyOf(key);
      const counter = new HashingCounter();
      const uploader = partUploader(objectKey);
      const consumed = pipeline(counter, (source: AsyncIterable<Buffer>) => uploader.consume(source));
      let result: T;
      let parts: CompletedPart[] = [];
      try {
        result = await produce(counter);
        counter.end();
        await consumed;
        if (uploader.multipart) parts = await uploader.finish();
      } catch (error) {
        counter.destroy();
        await consumed.catch(() => {});
        await uploader.abort().catch(() => {}); // an upload the abort missed is the lifecycle rule's
        throw error;
      }

      const ours = { result, bytes: counter.bytes, sha256: counter.hash.digest('hex') };
      const theirs = async () => ({ result, ...(await hashObject(objectKey)) });
      if (await exists(objectKey)) {
        // An earlier attempt of the same run finished the file: it stays, as it is.
        await uploader.abort().catch(() => {});
        return theirs();
      }
      try {
        if (uploader.multipart) {
          await client.send(
            new CompleteMultipartUploadCommand({
              Bucket: bucket,
              Key: objectKey,
              UploadId: uploader.uploadId(),
              MultipartUpload: { Parts: parts },
              IfNoneMatch: '*',
            }),
          );
        } else {
          await client.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key: objectKey,
              Body: uploader.tail(),
              ContentLength: uploader.tail().length,
              IfNoneMatch: '*',
            }),
          );
        }
      } catch (error) {
        const status = statusOf(error);
        if (status !== 412 && status !== 409) {
          await uploader.abort().catch(() => {});
          throw error;
        }
        await uploader.abort().catch(() => {});
        if (status === 409) await awaitOthersObject(objectKey, error);
        return theirs();
      }
      return ours;
    },

    async open(key) {
      let got;
      try {
        got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: objectKeyOf(key) }));
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw error;
      }
      const stream = bodyOf(got.Body);
      if (got.ContentLength === undefined) {
        stream.destroy();
        throw new Error('report store: the object came without a Content-Length');
      }
      return { stream, bytes: got.ContentLength };
    },
  };
}

/** The SDK's GetObject body on Node: an http.IncomingMessage (a Readable). */
function bodyOf(body: unknown): Readable {
  if (body instanceof Readable) return body;
  throw new Error('report store: GetObject answered no stream body');
}
