import { Writable } from 'node:stream';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { shipBatch } from '../src/app/indexer/event-shipper.js';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { writeReport } from '../src/app/reports/write-report.js';
import { REPORT_COLUMNS, type ReportSpec } from '../src/domain/reports/report-kinds.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';

/**
 * The report writers against the real stores: paid activity through REST, settled by the worker,
 * reconciled by the indexer and shipped to ClickHouse, then each report written into a buffer.
 */
let h: ServiceHarness;
let alice: Member;
let bob: Member;
let startedAt: Date;
let endedAt: Date;
let dir: string;

class BufferSink extends Writable {
  chunks: Buffer[] = [];
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.chunks.push(chunk);
    // A slow consumer now and then: the writer must wait for 'drain'.
    setImmediate(done);
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

async function run(spec: Partial<ReportSpec> & Pick<ReportSpec, 'type'>) {
  const sink = new BufferSink({ highWaterMark: 1024 });
  const full: ReportSpec = {
    intervalStart: startedAt,
    intervalEnd: endedAt,
    timezone: 'UTC',
    columns: REPORT_COLUMNS[spec.type],
    format: 'csv',
    accountId: null,
    ...spec,
  };
  const written = await writeReport({ clickhouse: h.env.app.clickhouse, db: h.env.app.db }, full, sink);
  return { ...written, bytes: sink.bytes() };
}

async function ship(): Promise<void> {
  for (;;) {
    const shipped = await shipBatch(h.env.app);
    if (shipped.events === 0 && shipped.legs === 0) break;
  }
}

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  dir = await mkdtemp(join(tmpdir(), 'report-writers-'));
  startedAt = new Date(Date.now() - 1000);
  alice = await h.member('rw_alice', 10_000_000n);
  bob = await h.member('rw_bob', 10_000_000n);
  const created = await h.call(alice, 'POST', '/posts', { content: 'a paid post', type: 'post' });
  expect(created.status).toBe(201);
  const postId = ((await created.json()) as { id: string }).id;
  expect(
    (await h.call(bob, 'POST', '/posts', { content: 'reply', type: 'reply', parent_id: postId })).status,
  ).toBe(201);
  expect((await h.call(bob, 'POST', `/posts/${postId}/repost`)).status).toBe(201);
  expect((await h.call(bob, 'POST', `/posts/${postId}/like`)).status).toBe(200);
  await paymentsSettled(h.env.app.db);
  await reconcileRound(h.env.app, { missingAfterMs: 600_000, limit: 1_000 });
  await ship();
  endedAt = new Date(Date.now() + 1000);
}, 120_000);
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('reconciliation.itemized', () => {
  test('csv: a header, then every verdict of the interval (matched too) with USDC amounts to 6 places, CRLF', async () => {
    const { rowCount, bytes, summary } = await run({ type: 'reconciliation.itemized' });
    const text = bytes.toString('utf8');
    expect(bytes[0]).not.toBe(0xef); // no byte-order mark
    const lines = text.split('\r\n');
    expect(lines.at(-1)).toBe('');
    expect(lines[0]).toBe(REPORT_COLUMNS['reconciliation.itemized'].join(','));
    // Two deposits (credited, not outbox payments), a post, a reply, a repost: the three payments.
    expect(rowCount).toBe(lines.length - 2);
    expect(rowCount).toBeGreaterThanOrEqual(3);
    expect(summary).toBeNull();
    for (const line of lines.slice(1, -1)) {
      const cells = line.split(',');
      expect(cells[4]).toBe('USDC');
      expect(cells[5]).toMatch(/^\d+\.\d{6}$/);
      expect(cells[9]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    expect(lines.some((line) => line.includes(',matched,USDC,1.000000,'))).toBe(true);
  });

  test('jsonl: one object per verdict keyed by the chosen columns; an interval before the activity is empty', async () => {
    const { rowCount, bytes } = await run({
      type: 'reconciliation.itemized',
      format: 'jsonl',
      columns: ['swap_tx', 'status', 'ledger_amount'],
      timezone: 'Asia/Kolkata',
    });
    const objects = bytes
      .toString('utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, string>);
    expect(objects).toHaveLength(rowCount);
    for (const object of objects) expect(Object.keys(object)).toEqual(['swap_tx', 'status', 'ledger_amount']);
    const before = await run({
      type: 'reconciliation.itemized',
      intervalStart: new Date(startedAt.getTime() - 3_600_000),
      intervalEnd: startedAt,
    });
    expect(before.rowCount).toBe(0);
    expect(before.bytes.toString()).toBe(`${REPORT_COLUMNS['reconciliation.itemized'].join(',')}\r\n`);
  });

  test('parquet: ClickHouse writes the file; PAR1 at both ends, its row count as chdb reads it back', async () => {
    const csv = await run({ type: 'reconciliation.itemized' });
    const { rowCount, bytes } = await run({ type: 'reconciliation.itemized', format: 'parquet' });
    expect(rowCount).toBe(csv.rowCount);
    expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
    expect(bytes.subarray(-4).toString()).toBe('PAR1');
    const path = join(dir, 'reconciliation.parquet');
    await writeFile(path, bytes);
    const result = await h.env.app.clickhouse.client.query({
      query: `SELECT count() AS n, countIf(currency = 'USDC') AS usdc FROM file({path:String}, 'Parquet')`,
      query_params: { path },
      format: 'JSONEachRow',
    });
    expect(await result.json()).toEqual([{ n: String(rowCount), usdc: String(rowCount) }]);
  });
});
