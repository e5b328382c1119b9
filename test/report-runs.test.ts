import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { insertOrFindLiveRun } from '../src/adapters/postgres/report-runs.repository.js';
import { runReportAttempt } from '../src/app/reports/run-report.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import type { AccountEvent } from '../src/domain/events/event-types.js';
import { REPORT_COLUMNS } from '../src/domain/reports/report-kinds.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { until } from './support/until.js';

/**
 * Report runs end to end (issue 50 item 1): REST and GraphQL asking, the worker role making the
 * file into the report store, the run's state, its file and its events; every refusal with its
 * status. The file's content is the writers' (their own tests); here: that it is the bytes the run
 * says (sha256, size) and that the lifecycle ends once.
 */
let h: ServiceHarness;
let finance: Member;
let alice: Member;
let bob: Member;

const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  const app = h.env.app;
  const financeAccount = await createAccount(app, { handle: 'rep_finance', role: 'finance' });
  finance = { account: financeAccount, key: (await createApiKey(app.apiKeys, financeAccount.id)).key };
  alice = await h.member('rep_alice', 0n);
  bob = await h.member('rep_bob', 0n);
});
afterAll(async () => {
  await h?.close();
});

interface RunBody {
  id: string;
  interval_end: string;
  type: string;
  status: string;
  row_count: number | null;
  bytes: number | null;
  sha256: string | null;
  file_url: string | null;
  error: string | null;
  created_at: string;
}

async function post(who: Member, body: unknown, headers: Record<string, string> = {}) {
  const response = await h.call(who, 'POST', '/reports', body, headers);
  return {
    status: response.status,
    body: (await response.json()) as RunBody & { error?: string; message?: string },
  };
}

async function runOf(who: Member, id: string): Promise<RunBody> {
  const response = await h.call(who, 'GET', `/reports/${id}`);
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as RunBody;
}

const ended = (who: Member, id: string) =>
  until(
    `report ${id} ends`,
    () => runOf(who, id),
    (run) => run.status === 'succeeded' || run.status === 'failed',
    60_000,
  );

async function eventsOf(who: Member): Promise<AccountEvent[]> {
  const response = await h.call(who, 'GET', '/events?after=0&limit=100');
  return ((await response.json()) as { events: AccountEvent[] }).events;
}

describe('refusals', () => {
  const valid = { type: 'account.statement', interval_start: day(30), interval_end: day(1) };
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['an unknown type', { ...valid, type: 'ledger' }, 'type'],
    ['an unknown format', { ...valid, format: 'xlsx' }, 'format'],
    [
      'koinly on a type other than account.statement',
      { ...valid, type: 'ledger.itemized', format: 'koinly' },
      'format',
    ],
    ['a column the type does not have', { ...valid, columns: ['amount', 'slot'] }, 'columns'],
    ['an empty column list', { ...valid, columns: [] }, 'columns'],
    ['a repeated column', { ...valid, columns: ['amount', 'amount'] }, 'columns'],
    ['an unknown time zone', { ...valid, timezone: 'Europe/Atlantis' }, 'timezone'],
    ['an end before the start', { ...valid, interval_start: day(1), interval_end: day(30) }, 'interval_end'],
    ['more than 366 days', { ...valid, interval_start: day(400), interval_end: day(1) }, 'interval_end'],
    [
      'an end in the future',
      { ...valid, interval_end: new Date(Date.now() + 3_600_000).toISOString() },
      'interval_end',
    ],
    ['a date that does not exist', { ...valid, interval_start: '2026-02-30' }, 'interval_start'],
    ['account on another type', { ...valid, type: 'ledger.itemized', account: 'rep_bob' }, 'account'],
    ['a field reports do not have', { ...valid, colour: 'red' }, 'colour'],
  ];
  test.each(cases)('%s is 400 invalid_request naming the field', async (_what, body, field) => {
    const { status, body: answer } = await post(alice, body);
    expect(status).toBe(400);
    expect(answer.error).toBe('invalid_request');
    expect(answer.message).toContain(field);
  });

  test('input is checked before the role: bad input from a plain key is 400, good input 403', async () => {
    expect(
      (await post(alice, { type: 'ledger.itemized', interval_start: day(2), interval_end: day(3) })).status,
    ).toBe(400);
    const forbidden = await post(alice, {
      type: 'ledger.itemized',
      interval_start: day(3),
      interval_end: day(2),
    });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toBe('forbidden');
    const statementOfBob = await post(alice, { ...valid, account: 'rep_bob' });
    expect(statementOfBob.status).toBe(403);
    // Finance may; a handle no account has is 400 naming account.
    expect((await post(finance, { ...valid, account: 'rep_nobody' })).body.error).toBe('invalid_request');
  });

  test('another account’s run and a malformed id are 404; GraphQL says the same', async () => {
    const mine = await post(alice, { ...valid, interval_start: day(20) });
    expect(mine.status).toBe(202);
    for (const path of [`/reports/${mine.body.id}`, `/reports/${mine.body.id}/file`, '/reports/not-a-uuid']) {
      const response = await h.call(bob, 'GET', path);
      expect(response.status).toBe(404);
      expect(((await response.json()) as { error: string }).error).toBe('not_found');
    }
    const { errors } = await h.gql(bob, 'query ($id: ID!) { report(id: $id) { id } }', { id: mine.body.id });
    expect(errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });
});

describe('the run lifecycle', () => {
  test('two identical requests at once make one run: one 202, one 200, the same id', async () => {
    const body = {
      type: 'account.statement',
      interval_start: day(10),
      interval_end: day(9),
      timezone: 'Europe/Paris',
    };
    const [a, b] = await Promise.all([post(alice, body), post(alice, body)]);
    expect([a.status, b.status].sort()).toEqual([200, 202]);
    expect(a.body.id).toBe(b.body.id);
    expect(Object.keys(a.body).sort()).toEqual(
      ['created_at', 'format', 'id', 'interval_end', 'interval_start', 'status', 'timezone', 'type'].sort(),
    );
    const all = await h.env.app.db
      .selectFrom('report_runs')
      .select(['id'])
      .where('account_id', '=', alice.account.id)
      .where('timezone', '=', 'Europe/Paris')
      .execute();
    expect(all.map((r) => r.id)).toEqual([a.body.id]);
    expect((await h.env.app.reportsQueue.queue.getJob(a.body.id))?.id).toBe(a.body.id);
  });

  test('Idempotency-Key: a replay answers the first answer, byte for byte', async () => {
    const body = { type: 'account.statement', interval_start: day(12), interval_end: day(11) };
    const headers = { 'idempotency-key': `rep-${Date.now()}` };
    const first = await h.call(alice, 'POST', '/reports', body, headers);
    const firstText = await first.text();
    expect(first.status).toBe(202);
    await ended(alice, (JSON.parse(firstText) as RunBody).id);
    const again = await h.call(alice, 'POST', '/reports', body, headers);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstText);
    const other = await h.call(alice, 'POST', '/reports', { ...body, format: 'jsonl' }, headers);
    expect(other.status).toBe(422);
  });

  test('a run that succeeds: its file is the bytes its sha256 and size say; report.succeeded is in the log', async () => {
    const asked = await post(finance, {
      type: 'reconciliation.itemized',
      interval_start: day(3),
      interval_end: new Date().toISOString(),
    });
    expect(asked.status).toBe(202);
    expect(asked.body.status).toBe('pending');
    const run = await ended(finance, asked.body.id);
    expect(run.error).toBeNull();
    expect(run.status).toBe('succeeded');
    expect(run.file_url).toBe(`/api/v1/reports/${run.id}/file`);
    const file = await h.call(finance, 'GET', `/reports/${run.id}/file`);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(file.headers.get('content-disposition')).toMatch(
      /^attachment; filename="reconciliation-itemized-.*\.csv"$/,
    );
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.length).toBe(run.bytes);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(run.sha256);
    expect(bytes.toString('utf8').split('\r\n')[0]?.replace(/\n.*/s, '')).toBe(
      REPORT_COLUMNS['reconciliation.itemized'].join(','),
    );
    const event = await until(
      'report.succeeded in the log',
      async () =>
        (await eventsOf(finance)).find((e) => e.type === 'report.succeeded' && e.data.id === run.id),
      (found) => found !== undefined,
      30_000,
    );
    expect(event!.data).toEqual({
      id: run.id,
      type: 'reconciliation.itemized',
      status: 'succeeded',
      row_count: run.row_count,
      sha256: run.sha256,
      file_url: run.file_url,
    });
    // The same parameters again once it ended: a new run (only live runs are shared).
    const again = await post(finance, {
      type: 'reconciliation.itemized',
      interval_start: day(3),
      interval_end: asked.body.interval_end,
    });
    expect(again.status).toBe(202);
    expect(again.body.id).not.toBe(run.id);
  });

  test('a run whose writing fails ends failed, once, with report.failed; its file is 409', async () => {
    const app = h.env.app;
    const { run } = await insertOrFindLiveRun(app.db, {
      accountId: bob.account.id,
      type: 'account.statement',
      intervalStart: new Date(`${day(5)}T00:00:00Z`),
      intervalEnd: new Date(`${day(4)}T00:00:00Z`),
      timezone: 'UTC',
      columns: REPORT_COLUMNS['account.statement'],
      format: 'csv',
      subjectAccountId: bob.account.id,
      paramsHash: `test-${Date.now()}`,
    });
    const pendingFile = await h.call(bob, 'GET', `/reports/${run.id}/file`);
    expect(pendingFile.status).toBe(409);
    expect(((await pendingFile.json()) as { error: string }).error).toBe('conflict');

    const unreachable = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), {
      code: 'ECONNREFUSED',
    });
    const failingStore = { ...app.reportStore, write: () => Promise.reject(unreachable) };
    // A retryable failure before the last try goes back to the queue; the run stays running.
    await expect(
      runReportAttempt({ ...app, reportStore: failingStore }, run.id, { finalTry: false }),
    ).rejects.toBe(unreachable);
    expect((await runOf(bob, run.id)).status).toBe('running');
    // The last try fails the run, with a phrase that names no host.
    expect(await runReportAttempt({ ...app, reportStore: failingStore }, run.id, { finalTry: true })).toBe(
      'failed',
    );
    expect(await runReportAttempt({ ...app, reportStore: failingStore }, run.id, { finalTry: true })).toBe(
      'already-ended',
    );
    const failed = await runOf(bob, run.id);
    expect(failed).toMatchObject({ status: 'failed', sha256: null, file_url: null, row_count: null });
    expect(failed.error).not.toContain('127.0.0.1');
    expect((await h.call(bob, 'GET', `/reports/${run.id}/file`)).status).toBe(409);
    const events = await until(
      'report.failed in the log',
      async () => (await eventsOf(bob)).filter((e) => e.type === 'report.failed' && e.data.id === run.id),
      (found) => found.length > 0,
      30_000,
    );
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toEqual({
      id: run.id,
      type: 'account.statement',
      status: 'failed',
      error: failed.error,
    });
  });

  test('listing: newest first, paged with a signed cursor that works only for its account', async () => {
    const carol = await h.member('rep_carol', 0n);
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) {
      const asked = await post(carol, {
        type: 'account.statement',
        interval_start: day(40 + n),
        interval_end: day(39),
      });
      expect(asked.status).toBe(202);
      ids.push(asked.body.id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const response = await h.call(carol, 'GET', `/reports?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(response.status).toBe(200);
      const page = (await response.json()) as {
        reports: RunBody[];
        has_more: boolean;
        next_cursor: string | null;
      };
      expect(page.reports.length).toBeLessThanOrEqual(2);
      seen.push(...page.reports.map((r) => r.id));
      cursor = page.next_cursor;
      expect(page.has_more).toBe(cursor !== null);
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());

    const first = (await (await h.call(carol, 'GET', '/reports?limit=2')).json()) as { next_cursor: string };
    expect((await h.call(alice, 'GET', `/reports?cursor=${first.next_cursor}`)).status).toBe(400);
    expect((await h.call(carol, 'GET', '/reports?limit=0')).status).toBe(400);

    const { data, errors } = await h.gql(
      carol,
      '{ reports(first: 3) { reports { id status } hasMore nextCursor } }',
    );
    expect(errors).toBeUndefined();
    const listed = data.reports.reports as Array<{ id: string }>;
    expect(listed.map((r) => r.id)).toEqual([...ids].reverse().slice(0, 3));
    expect(data.reports.hasMore).toBe(true);
  });

  test('GraphQL requestReport: the same core (same run for the same parameters), refusals naming the argument', async () => {
    const input = { type: 'account.statement', intervalStart: day(60), intervalEnd: day(59) };
    const mutation = `mutation ($input: RequestReportInput!) {
      requestReport(input: $input) { created report { id status type format timezone account } } }`;
    const [one, two] = await Promise.all([
      h.gql(alice, mutation, { input }),
      h.gql(alice, mutation, { input }),
    ]);
    expect(one.errors).toBeUndefined();
    expect(two.errors).toBeUndefined();
    expect(one.data.requestReport.report.id).toBe(two.data.requestReport.report.id);
    expect([one.data.requestReport.created, two.data.requestReport.created].sort()).toEqual([false, true]);
    expect(one.data.requestReport.report).toMatchObject({
      type: 'account.statement',
      format: 'csv',
      account: 'rep_alice',
    });
    const bad = await h.gql(alice, mutation, { input: { ...input, intervalEnd: day(61) } });
    expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(bad.errors?.[0]?.message).toContain('input.intervalEnd');
    const forbidden = await h.gql(alice, mutation, { input: { ...input, type: 'balance.summary' } });
    expect(forbidden.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});
