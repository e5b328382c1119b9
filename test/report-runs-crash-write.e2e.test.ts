import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { requestRun } from '../src/app/reports/report-runs.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { ALL_SCOPES } from '../src/domain/auth/api-key.js';
import { killChild, startRoleChild } from './support/role-child.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { reportEndings, settledReportEndings } from './support/report-events.js';
import { until } from './support/until.js';

/**
 * The worker role as a real process (`src/main.ts --only worker`), killed with SIGKILL while it
 * WRITES a report file (test/report-runs-crash.e2e.test.ts kills it while it takes the run). The
 * worker's embedded ClickHouse folder is seeded beforehand with enough reconciliation verdicts
 * that writing reconciliation.itemized takes seconds; the worker is killed once the run's partial
 * file in the store's `.partial/` folder holds part of the rows. After a restart the run ends
 * once: `succeeded` with every seeded row, one file under the run's key whose bytes are the sha256
 * and size recorded (the dead attempt's partial file is shorter and never linked), one
 * `report.succeeded` event.
 */
const SEEDED_ROWS = 600_000;
const DAYS = 7;
/** Bytes the partial file must hold before the kill: the header alone is ~100. */
const KILL_AFTER_BYTES = 512 * 1024;

let env: TestEnv;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  await env.app.bootstrapChain();
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await env?.close();
});

const startWorker = () => startRoleChild(env, 'worker', children, { CREATOR_FUND_ENABLED: 'false' });

const runRow = (id: string) =>
  env.app.db.selectFrom('report_runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** Seeds the worker's chdb folder (DATA_DIR/clickhouse) from a process of its own. */
async function seedWorkerClickHouse(firstDay: string): Promise<void> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'test/support/seed-verdicts.child.ts',
      path.join(env.config.DATA_DIR, 'clickhouse'),
      env.config.CLICKHOUSE_DATABASE,
      String(SEEDED_ROWS),
      firstDay,
      String(DAYS),
    ],
    { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' } },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code, output).toBe(0);
  expect(output).toContain(`"n":"${SEEDED_ROWS}"`);
}

/** Line feeds in a file, read as a stream. */
async function countLines(file: string): Promise<number> {
  let lines = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
  }
  return lines;
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) hash.update(chunk);
  return hash.digest('hex');
}

describe('a report run across a worker crash while writing its file', { timeout: 300_000 }, () => {
  test('killed with SIGKILL mid-file: after a restart the run ends once, with the whole file', async () => {
    // Seven whole UTC days ending at today's midnight (interval_end may not be later than now).
    const end = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`);
    const start = new Date(end.getTime() - DAYS * 86_400_000);
    await seedWorkerClickHouse(start.toISOString().slice(0, 10));

    const account = await createAccount(env.app, { handle: 'rep_crash_write', role: 'finance' });
    const viewer = {
      accountId: account.id,
      handle: account.handle,
      role: account.role,
      scopes: new Set(ALL_SCOPES),
    };
    const { run, created } = await requestRun(
      env.app,
      viewer,
      {
        type: 'reconciliation.itemized',
        interval_start: start.toISOString(),
        interval_end: end.toISOString(),
      },
      new Date(),
    );
    expect(created).toBe(true);

    const folder = path.join(env.config.dataDir, 'reports');
    const partialDir = path.join(folder, '.partial');
    const partials = async () => {
      const names = await readdir(partialDir).catch(() => [] as string[]);
      const found: Array<{ name: string; size: number }> = [];
      for (const name of names.filter((n) => n.startsWith(`${run.id}.`))) {
        const info = await stat(path.join(partialDir, name)).catch(() => undefined);
        if (info) found.push({ name, size: info.size });
      }
      return found;
    };

    const first = await startWorker();
    const writing = await until(
      'the worker writing the file',
      partials,
      (found) => found.some((p) => p.size >= KILL_AFTER_BYTES),
      120_000,
    );
    await killChild(first);
    const [dead] = writing;
    // Killed mid-write: the run has not ended, no file is published under its key.
    const orphaned = await runRow(run.id);
    expect(orphaned.status).toBe('running');
    expect(orphaned.sha256).toBeNull();
    expect((await readdir(folder)).filter((name) => name.startsWith(run.id))).toEqual([]);
    const deadSize = (await stat(path.join(partialDir, dead!.name))).size;
    expect(deadSize).toBeGreaterThanOrEqual(KILL_AFTER_BYTES);

    const second = await startWorker();
    const ended = await until(
      'the run ends after the restart',
      () => runRow(run.id),
      (row) => row.status === 'succeeded' || row.status === 'failed',
      240_000,
    );
    expect(ended.error).toBeNull();
    expect(ended.status).toBe('succeeded');
    expect(ended.attempts).toBeGreaterThanOrEqual(orphaned.attempts + 1);
    expect(Number(ended.row_count)).toBe(SEEDED_ROWS);

    // One file under the run's key: the bytes recorded, every row once (a header, CRLF lines).
    const file = path.join(folder, ended.file_key!);
    expect((await readdir(folder)).filter((name) => name.startsWith(run.id))).toEqual([ended.file_key]);
    expect((await stat(file)).size).toBe(Number(ended.bytes));
    expect(await sha256Of(file)).toBe(ended.sha256);
    expect(await countLines(file)).toBe(SEEDED_ROWS + 1);
    // The dead attempt got only part of the way: its partial file is shorter and was never linked.
    expect(deadSize).toBeLessThan(Number(ended.bytes));
    expect((await partials()).map((p) => p.name)).not.toContain(ended.file_key);

    const { endings: told, staged } = await settledReportEndings(env.app.db, account.id);
    expect(staged).toEqual([]);
    const again = await reportEndings(env.app.db, account.id);
    expect(again).toHaveLength(1);
    expect(told).toHaveLength(1);
    expect(again[0]!.data).toMatchObject({ id: run.id, status: 'succeeded', sha256: ended.sha256 });
    expect(await runRow(run.id)).toEqual(ended);
    await killChild(second);
  });
});
