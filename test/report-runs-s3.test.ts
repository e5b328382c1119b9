import { createHash, randomUUID } from 'node:crypto';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createS3Client } from '../src/adapters/files/s3-report-store.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { startTestS3Server, type TestS3Server } from './support/s3-server.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { until } from './support/until.js';

/**
 * A report run of the service configured with a bucket (REPORT_S3_*): the worker writes the file
 * into the bucket under the prefix, and GET /reports/{id}/file streams it back from there, with
 * the sha256 the run published.
 */
let server: TestS3Server;
let h: ServiceHarness;
let finance: Member;
const bucket = `runs-${randomUUID().slice(0, 8)}`;
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

beforeAll(async () => {
  server = await startTestS3Server();
  const client = createS3Client({ region: 'us-east-1', endpoint: server.endpoint, credentials });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  client.destroy();
  h = await openServiceHarness({
    RATE_LIMIT_MULTIPLIER: '0',
    REPORT_S3_BUCKET: bucket,
    REPORT_S3_ENDPOINT: server.endpoint,
    REPORT_S3_PREFIX: 'ledgerfeed/',
    REPORT_S3_ACCESS_KEY_ID: credentials.accessKeyId,
    REPORT_S3_SECRET_ACCESS_KEY: credentials.secretAccessKey,
  });
  const account = await createAccount(h.env.app, { handle: 'rs3_finance', role: 'finance' });
  finance = { account, key: (await createApiKey(h.env.app.apiKeys, account.id)).key };
  await h.member('rs3_alice', 5_000_000n);
}, 120_000);
afterAll(async () => {
  await h?.close();
  await server?.stop();
});

test('a run writes its file into the bucket under the prefix; the file downloads from there', async () => {
  const end = new Date();
  const asked = await h.call(finance, 'POST', '/reports', {
    type: 'ledger.itemized',
    interval_start: new Date(end.getTime() - 3_600_000).toISOString(),
    interval_end: end.toISOString(),
  });
  expect(asked.status).toBe(202);
  const { id } = (await asked.json()) as { id: string };
  const run = await until(
    `report ${id} ends`,
    async () => (await (await h.call(finance, 'GET', `/reports/${id}`)).json()) as Record<string, unknown>,
    (body) => body.status === 'succeeded' || body.status === 'failed',
    60_000,
  );
  expect(run.status).toBe('succeeded');

  const download = await h.call(finance, 'GET', `/reports/${id}/file`);
  expect(download.status).toBe(200);
  const bytes = Buffer.from(await download.arrayBuffer());
  expect(bytes.length).toBe(run.bytes);
  expect(createHash('sha256').update(bytes).digest('hex')).toBe(run.sha256);
  expect(bytes.toString('utf8')).toMatch(/^created_at,/);

  // The object is the bucket's, under the prefix, and holds the same bytes.
  const client = createS3Client({ region: 'us-east-1', endpoint: server.endpoint, credentials });
  try {
    const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'ledgerfeed/' }));
    const key = `ledgerfeed/${id}.csv`;
    expect(listed.Contents?.map((o) => o.Key)).toContain(key);
    const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    expect(Buffer.from(await object.Body!.transformToByteArray()).equals(bytes)).toBe(true);
  } finally {
    client.destroy();
  }
});
