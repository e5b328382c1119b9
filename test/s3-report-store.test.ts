import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  CreateBucketCommand,
  ListObjectsV2Command,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createS3Client, createS3ReportStore } from '../src/adapters/files/s3-report-store.js';
import { startTestS3Server, type TestS3Server } from './support/s3-server.js';

/**
 * The S3-compatible report store (src/adapters/files/s3-report-store.ts) against a real
 * S3-compatible server on 127.0.0.1 (fauxqs, in a child process: test/support/s3-server.child.ts).
 * Parts of 5 MiB (S3's least), two in flight.
 */
const MIB = 1024 * 1024;
const PART = 5 * MIB;

let server: TestS3Server;
let client: S3Client;
const bucket = `reports-${randomUUID().slice(0, 8)}`;
/** What the store sent, seen by a middleware on its client. */
const seen = { uploadIds: [] as string[], partsInFlight: 0, mostPartsInFlight: 0 };

beforeAll(async () => {
  server = await startTestS3Server();
  client = createS3Client({
    region: 'us-east-1',
    endpoint: server.endpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const part = context.commandName === 'UploadPartCommand';
      if (part) seen.mostPartsInFlight = Math.max(seen.mostPartsInFlight, ++seen.partsInFlight);
      try {
        const answer = await next(args);
        const uploadId = (answer.output as { UploadId?: string }).UploadId;
        if (context.commandName === 'CreateMultipartUploadCommand' && uploadId) seen.uploadIds.push(uploadId);
        return answer;
      } finally {
        if (part) seen.partsInFlight--;
      }
    },
    { step: 'initialize', name: 'countParts' },
  );
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
});

afterAll(async () => {
  client?.destroy();
  await server?.stop();
});

const store = () =>
  createS3ReportStore({ client, bucket, prefix: 'runs/', partBytes: PART, partsInFlight: 2 });

/** A full garbage collection (V8's gc(), reached without starting the process with --expose-gc). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Deterministic bytes of a seed: `bytes` of them, in 64 kB chunks written with backpressure. */
async function produceBytes(sink: Writable, bytes: number, seed: string): Promise<string> {
  const hash = createHash('sha256');
  const chunk = Buffer.alloc(64 * 1024);
  for (let written = 0, n = 0; written < bytes; n++) {
    const size = Math.min(chunk.length, bytes - written);
    chunk.fill(`${seed}:${n};`);
    const piece = chunk.subarray(0, size);
    hash.update(piece);
    written += size;
    if (!sink.write(Buffer.from(piece))) await once(sink, 'drain');
  }
  return hash.digest('hex');
}

async function readAll(stream: AsyncIterable<Buffer>): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { bytes, sha256: hash.digest('hex') };
}

async function objectKeys(): Promise<string[]> {
  const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
  return (listed.Contents ?? []).map((object) => object.Key!).sort();
}

/** Whether the server still holds the multipart upload (an aborted or completed one is gone). */
async function uploadPending(key: string, uploadId: string): Promise<boolean> {
  try {
    await client.send(
      new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: 1, Body: 'x' }),
    );
    return true;
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchUpload') return false;
    throw error;
  }
}

describe('the S3-compatible report store', () => {
  test('a 12 MB file goes up in parts and reads back byte for byte, with its sha256 and size', async () => {
    const uploadsBefore = seen.uploadIds.length;
    const size = 12 * MIB + 12_345;
    const stored = await store().write('run-12mb.csv', (sink) => produceBytes(sink, size, 'a'));
    expect(stored.bytes).toBe(size);
    expect(stored.sha256).toBe(stored.result);
    expect(seen.uploadIds.length - uploadsBefore).toBe(1); // one multipart upload, 3 parts

    const file = await store().open('run-12mb.csv');
    expect(file?.bytes).toBe(size);
    expect(await readAll(file!.stream)).toEqual({ bytes: size, sha256: stored.sha256 });
    expect(await objectKeys()).toContain('runs/run-12mb.csv');
    expect(await uploadPending('runs/run-12mb.csv', seen.uploadIds.at(-1)!)).toBe(false);
  });

  test('a file smaller than a part is one PUT; an empty file is stored too', async () => {
    const uploadsBefore = seen.uploadIds.length;
    const small = await store().write('run-small.jsonl', (sink) => produceBytes(sink, 1000, 'b'));
    const empty = await store().write('run-empty.csv', () => Promise.resolve('none'));
    expect(seen.uploadIds.length).toBe(uploadsBefore);
    expect(small.bytes).toBe(1000);
    expect(await readAll((await store().open('run-small.jsonl'))!.stream)).toEqual({
      bytes: 1000,
      sha256: small.result,
    });
    expect(empty).toEqual({
      result: 'none',
      bytes: 0,
      sha256: createHash('sha256').digest('hex'),
    });
    expect((await store().open('run-empty.csv'))?.bytes).toBe(0);
  });

  test('a 64 MB write never holds the file: two 5 MiB parts in flight at most, memory well below 64 MB', async () => {
    const size = 64 * MIB;
    // Live memory: what a full collection leaves, sampled while the file streams (garbage, such as
    // the producer's spent chunks, is not held).
    const gc = collector();
    gc();
    const before = process.memoryUsage();
    let peak = { rss: 0, arrayBuffers: 0 };
    const sampler = setInterval(() => {
      gc();
      const now = process.memoryUsage();
      peak = {
        rss: Math.max(peak.rss, now.rss - before.rss),
        arrayBuffers: Math.max(peak.arrayBuffers, now.arrayBuffers - before.arrayBuffers),
      };
    }, 25);
    seen.mostPartsInFlight = 0;
    let stored;
    try {
      stored = await store().write('run-64mb.parquet', (sink) => produceBytes(sink, size, 'c'));
    } finally {
      clearInterval(sampler);
    }
    expect(stored.bytes).toBe(size);
    expect(stored.sha256).toBe(stored.result);
    expect(seen.mostPartsInFlight).toBe(2);
    // Buffers held: two parts in flight, one filling, and what the HTTP client has not let go of yet
    // (about 25 MB here, the same for 128 MB); the whole file would be 64 MB.
    expect(peak.arrayBuffers, JSON.stringify(peak)).toBeGreaterThan(0);
    expect(peak.arrayBuffers, JSON.stringify(peak)).toBeLessThan(32 * MIB);
    expect(peak.rss, JSON.stringify(peak)).toBeLessThan(48 * MIB);
    const file = await store().open('run-64mb.parquet');
    expect(await readAll(file!.stream)).toEqual({ bytes: size, sha256: stored.sha256 });
  });

  test('a rejected produce leaves no object and no pending multipart upload', async () => {
    const uploadsBefore = seen.uploadIds.length;
    await expect(
      store().write('run-failed.csv', async (sink) => {
        await produceBytes(sink, 11 * MIB, 'd'); // two parts sent, the third filling
        throw new Error('ClickHouse went away');
      }),
    ).rejects.toThrow('ClickHouse went away');
    expect(seen.uploadIds.length - uploadsBefore).toBe(1);
    expect(await uploadPending('runs/run-failed.csv', seen.uploadIds.at(-1)!)).toBe(false);
    expect(await objectKeys()).not.toContain('runs/run-failed.csv');
    expect(await store().open('run-failed.csv')).toBeUndefined();

    // Before any part: nothing was begun at all.
    await expect(
      store().write('run-failed-early.csv', (sink) => {
        sink.write('a,b\n');
        return Promise.reject(new Error('refused'));
      }),
    ).rejects.toThrow('refused');
    expect(await objectKeys()).not.toContain('runs/run-failed-early.csv');
  });

  test('a second write of a key keeps the first bytes and answers the first sha256 and size', async () => {
    const first = await store().write('run-twice.csv', (sink) => produceBytes(sink, 6 * MIB, 'first'));
    const second = await store().write('run-twice.csv', async (sink) => {
      await produceBytes(sink, 7 * MIB, 'second');
      return 'second attempt';
    });
    expect(second).toEqual({ result: 'second attempt', bytes: 6 * MIB, sha256: first.sha256 });
    const file = await store().open('run-twice.csv');
    expect(await readAll(file!.stream)).toEqual({ bytes: 6 * MIB, sha256: first.result });
    // The second attempt's upload was aborted, not left pending.
    expect(await uploadPending('runs/run-twice.csv', seen.uploadIds.at(-1)!)).toBe(false);

    // The same for a file of one PUT.
    const small = await store().write('run-twice.jsonl', (sink) => produceBytes(sink, 500, 'one'));
    const again = await store().write('run-twice.jsonl', (sink) => produceBytes(sink, 700, 'two'));
    expect({ bytes: again.bytes, sha256: again.sha256 }).toEqual({ bytes: 500, sha256: small.result });
  });

  test('open of a key that holds nothing is undefined; a key that is not a file name is refused', async () => {
    expect(await store().open('run-never-written.csv')).toBeUndefined();
    await expect(store().open('../other/secret')).rejects.toThrow('is not a file key');
    await expect(store().write('a/b.csv', () => Promise.resolve(0))).rejects.toThrow('is not a file key');
  });
});
