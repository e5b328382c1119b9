import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { requestRun } from '../src/app/reports/report-runs.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { ALL_SCOPES } from '../src/domain/auth/api-key.js';
import { killChild, startRoleChild } from './support/role-child.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { settledReportEndings } from './support/report-events.js';
import { until } from './support/until.js';

/**
 * The worker role as a real process (`src/main.ts --only worker`), killed with SIGKILL while it
 * holds a report run: this test holds the run's row locked, so the worker's first step (taking the
 * run) waits inside Postgres with the job active in BullMQ, and the worker is killed there. Its
 * statement may still land after the kill (the dead client's backend runs it once the lock is
 * released): the run is then `running` with no worker. After a restart the run ends once:
 * `succeeded`, one `report.succeeded`, one file whose bytes are the sha256 and size recorded; the
 * job run again afterwards changes nothing.
 */
let env: TestEnv;
const children: ChildProcessWithoutNullStreams[] = [];
const lockers: pg.Client[] = [];

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  await env.app.bootstrapChain();
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const locker of lockers) await locker.end().catch(() => {});
  await env?.close();
});

const startWorker = () => startRoleChild(env, 'worker', children, { CREATOR_FUND_ENABLED: 'false' });

const runRow = (id: string) =>
  env.app.db.selectFrom('report_runs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('a report run across a worker crash', { timeout: 240_000 }, () => {
  test('killed with SIGKILL holding the run: after a restart the run ends once', async () => {
    const account = await createAccount(env.app, { handle: 'rep_crash', role: 'finance' });
    const viewer = {
      accountId: account.id,
      handle: account.handle,
      role: account.role,
      scopes: new Set(ALL_SCOPES),
    };
    const end = new Date();
    const { run, created } = await requestRun(
      env.app,
      viewer,
      {
        type: 'reconciliation.itemized',
        interval_start: new Date(end.getTime() - 7 * 86_400_000).toISOString(),
        interval_end: end.toISOString(),
      },
      end,
    );
    expect(created).toBe(true);

    // Hold the run's row: the worker's first statement on it waits for this transaction.
    const locker = new pg.Client({ connectionString: env.config.DATABASE_URL });
    lockers.push(locker);
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT id FROM report_runs WHERE id = $1 FOR UPDATE', [run.id]);

    const first = await startWorker();
    await until(
      'the worker waiting on the run',
      async () =>
        (
          await locker.query<{ n: string }>(
            `SELECT count(*) AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE 'update "report_runs"%'`,
          )
        ).rows[0]!.n,
      (n) => Number(n) > 0,
      60_000,
    );
    expect((await env.app.reportsQueue.queue.getJob(run.id))?.id).toBe(run.id);
    expect(await (await env.app.reportsQueue.queue.getJob(run.id))!.getState()).toBe('active');
    await killChild(first);
    await locker.query('COMMIT');
    await sleep(500); // the dead worker's statement, if its backend still runs it
    const orphaned = await runRow(run.id);
    expect(['pending', 'running']).toContain(orphaned.status);

    const second = await startWorker();
    const ended = await until(
      'the run ends after the restart',
      () => runRow(run.id),
      (row) => row.status === 'succeeded' || row.status === 'failed',
      120_000,
    );
    expect(ended.error).toBeNull();
    expect(ended.status).toBe('succeeded');
    expect(ended.attempts).toBeGreaterThanOrEqual(orphaned.attempts + 1);

    // The file is the bytes the run recorded; no other file was published for it.
    const folder = path.join(env.config.dataDir, 'reports');
    const bytes = await readFile(path.join(folder, ended.file_key!));
    expect(bytes.length).toBe(Number(ended.bytes));
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(ended.sha256);
    expect((await readdir(folder)).filter((name) => name.startsWith(run.id))).toEqual([ended.file_key]);

    // The job once more (a duplicate delivery): the run has ended, nothing changes.
    await env.app.reportsQueue.resubmit(run.id);
    await until(
      'the job run again',
      async () => (await env.app.reportsQueue.queue.getJob(run.id))?.getState(),
      (state) => state === 'completed',
      30_000,
    );
    const after = await runRow(run.id);
    expect(after).toEqual(ended);
    const { endings: told, staged } = await settledReportEndings(env.app.db, account.id);
    expect(staged).toEqual([]);
    expect(told).toHaveLength(1);
    expect(told[0]!.data).toMatchObject({ id: run.id, status: 'succeeded', sha256: ended.sha256 });
    await killChild(second);
  });
});
