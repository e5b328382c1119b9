import { createHash, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { rewindShipper, shipBatch } from '../src/app/indexer/event-shipper.js';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { clickhouseTime } from '../src/app/indexer/event-shipper.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import type { AccountEvent } from '../src/domain/events/event-types.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';
import { until } from './support/until.js';

/**
 * Closing a finance period (issue 50 item 3) against the real services: paid activity through
 * REST, settled and finalized by the worker, moved back to a past UTC day (the outbox rows' and the
 * movements' created_at, before reconciling and shipping), reconciled and shipped; then the period
 * is closed through REST and its runs are made by the worker role.
 */
let h: ServiceHarness;
let finance: Member;
let finance2: Member;
let admin: Member;
let alice: Member;
let bob: Member;

const NIL_UUID = '00000000-0000-0000-0000-000000000000';
const dayLabel = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
/** The day the activity is moved to, and days for the refusals. */
const closedDay = dayLabel(3);
const blockedDay = dayLabel(5);

/** The date (YYYY-MM-DD) of now in a timezone: the day that has not ended there. */
const localDate = (timezone: string, at: number) =>
  new Intl.DateTimeFormat('en-CA', {
    timeZone: timezone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(at);

/**
 * Today's date in a timezone, read where it stays today for the next 30 s: a request sent a moment
 * before local midnight would otherwise ask about a day that ends while it is in flight.
 */
async function currentPeriod(timezone: string): Promise<string> {
  const now = Date.now();
  if (localDate(timezone, now) !== localDate(timezone, now + 30_000)) {
    await new Promise((resolve) => setTimeout(resolve, 31_000));
  }
  return localDate(timezone, Date.now());
}

interface PeriodBody {
  period: string;
  status: string;
  closed_at: string | null;
  reports: Array<{ type: string; id: string; sha256: string | null; row_count: number | null }>;
}

async function ship(): Promise<void> {
  for (;;) {
    const shipped = await shipBatch(h.env.app);
    if (shipped.events === 0 && shipped.legs === 0) break;
  }
}

async function reconcileAll(): Promise<void> {
  for (let round = 0; round < 10; round++) {
    const { checked } = await reconcileRound(h.env.app, {
      missingAfterMs: 600_000,
      finalizedRecheckMs: 0,
      limit: 1_000,
    });
    if (checked === 0) return;
  }
}

async function member(handle: string, role: 'finance' | 'admin'): Promise<Member> {
  const account = await createAccount(h.env.app, { handle, role });
  return { account, key: (await createApiKey(h.env.app.apiKeys, account.id)).key };
}

async function json<T>(response: Response): Promise<{ status: number; body: T }> {
  return { status: response.status, body: (await response.json()) as T };
}

async function download(who: Member, id: string): Promise<Buffer> {
  const response = await h.call(who, 'GET', `/reports/${id}/file`);
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  finance = await member('fp_finance', 'finance');
  finance2 = await member('fp_finance2', 'finance');
  admin = await member('fp_admin', 'admin');
  const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(h.env.app.db);
  const t0 = rows[0]!.now;
  alice = await h.member('fp_alice', 10_000_000n);
  bob = await h.member('fp_bob', 10_000_000n);
  const created = await h.call(alice, 'POST', '/posts', { content: 'a paid post', type: 'post' });
  expect(created.status).toBe(201);
  const postId = ((await created.json()) as { id: string }).id;
  expect(
    (await h.call(bob, 'POST', '/posts', { content: 'reply', type: 'reply', parent_id: postId })).status,
  ).toBe(201);
  await paymentsSettled(h.env.app.db);
  await until(
    'every payment finalized',
    () =>
      sql<{
        n: string;
      }>`SELECT count(*) AS n FROM chain_transactions WHERE status NOT IN ('finalized', 'failed')`
        .execute(h.env.app.db)
        .then((r) => Number(r.rows[0]!.n)),
    (n) => n === 0,
    90_000,
  );
  // Everything since t0 moves to closedDay 12:00 UTC, in the same order and spacing.
  const noon = new Date(`${closedDay}T12:00:00Z`);
  for (const table of ['ledger_movements', 'chain_transactions']) {
    await sql`UPDATE ${sql.table(table)} SET created_at = ${noon}::timestamptz + (created_at - ${t0}::timestamptz)
               WHERE created_at >= ${t0}`.execute(h.env.app.db);
  }
  await rewindShipper(h.env.app.db);
  await ship();
  await reconcileAll();
  await ship();
}, 180_000);
afterAll(async () => {
  await h?.close();
});

describe('refusals', () => {
  test.each([
    ['a period that is no date', 'nope', {}, 'period'],
    ['a period that is no date, with no body at all', 'nope', undefined, 'period'],
    ['a month that does not exist', '2026-13', {}, 'period'],
    ['a day that does not exist', '2026-02-30', {}, 'period'],
    ['a timezone Intl does not know', '2026-10', { timezone: 'Mars/Olympus' }, 'timezone'],
    ['a field a close does not take', '2026-10', { zone: 'UTC' }, 'zone'],
  ])('%s is 400 naming the field, before the role (403)', async (_what, period, body, field) => {
    for (const who of [finance, alice]) {
      const { status, body: answer } = await json<{ error: string; message: string }>(
        await h.call(who, 'POST', `/finance/periods/${period}/close`, body),
      );
      expect(status).toBe(400);
      expect(answer.error).toBe('invalid_request');
      expect(answer.message).toContain(field);
    }
  });

  test('no finance role is 403', async () => {
    const { status, body } = await json<{ error: string }>(
      await h.call(alice, 'POST', `/finance/periods/${closedDay}/close`, {}),
    );
    expect(status).toBe(403);
    expect(body.error).toBe('forbidden');
    expect((await h.call(alice, 'GET', `/finance/periods/${closedDay}`)).status).toBe(403);
    expect((await h.call(alice, 'GET', '/finance/periods')).status).toBe(403);
  });

  test('a period that has not ended is 409 period_not_ended (this month, today, today in Pacific/Kiritimati)', async () => {
    for (const [length, timezone] of [
      [7, 'UTC'],
      [10, 'UTC'],
      [10, 'Pacific/Kiritimati'],
    ] as const) {
      const period = (await currentPeriod(timezone)).slice(0, length);
      const body = timezone === 'UTC' ? {} : { timezone };
      const { status, body: answer } = await json<{ error: string }>(
        await h.call(finance, 'POST', `/finance/periods/${period}/close`, body),
      );
      expect(status).toBe(409);
      expect(answer.error).toBe('period_not_ended');
    }
  }, 90_000);

  test('open verdicts in the period are 409 close_blocked with each status counted', async () => {
    const at = clickhouseTime(new Date());
    const verdict = (status: string, movementId: string, signature: string) => ({
      movement_id: movementId,
      signature,
      ledger_day: blockedDay,
      status,
      ledger_amount: '1000000',
      chain_amount: status === 'missing' ? '0' : '1000000',
      commitment: '',
      detail: '',
      checked_at: at,
    });
    await h.env.app.clickhouse.insertRows('reconciliation', [
      verdict('missing', randomUUID(), 'sig-missing-1'),
      verdict('missing', randomUUID(), 'sig-missing-2'),
      verdict('unexplained', NIL_UUID, 'sig-unexplained'),
      verdict('matched', randomUUID(), 'sig-matched'),
    ]);
    const { status, body } = await json<{ error: string; message: string; blockers: unknown }>(
      await h.call(finance, 'POST', `/finance/periods/${blockedDay}/close`, {}),
    );
    expect(status).toBe(409);
    expect(body.error).toBe('close_blocked');
    expect(body.blockers).toEqual([
      { status: 'missing', count: 2 },
      { status: 'unexplained', count: 1 },
    ]);
    const period = await json<PeriodBody>(await h.call(finance, 'GET', `/finance/periods/${blockedDay}`));
    expect(period.body).toMatchObject({ period: blockedDay, status: 'open', closed_at: null, reports: [] });
  });

  test('a payment of the period not finalized is 409 close_blocked (not_finalized)', async () => {
    const one = await h.env.app.db
      .selectFrom('chain_transactions')
      .select('id')
      .where('created_at', '>=', new Date(`${closedDay}T00:00:00Z`))
      .orderBy('created_at')
      .executeTakeFirstOrThrow();
    await sql`UPDATE chain_transactions SET status = 'confirmed' WHERE id = ${one.id}`.execute(h.env.app.db);
    try {
      const { status, body } = await json<{ error: string; blockers: unknown }>(
        await h.call(finance, 'POST', `/finance/periods/${closedDay}/close`, {}),
      );
      expect(status).toBe(409);
      expect(body).toMatchObject({
        error: 'close_blocked',
        blockers: [{ status: 'not_finalized', count: 1 }],
      });
    } finally {
      await sql`UPDATE chain_transactions SET status = 'finalized' WHERE id = ${one.id}`.execute(
        h.env.app.db,
      );
    }
  });
});

describe('closing a clean past period', () => {
  let closed: PeriodBody;
  let files: Map<string, Buffer>;

  test('202 closing, then closed with its three runs; each sha256 is its downloaded file', async () => {
    const first = await json<{ period: string; status: string }>(
      await h.call(finance, 'POST', `/finance/periods/${closedDay}/close`, {}),
    );
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect(first.body).toEqual({ period: closedDay, status: 'closing' });
    closed = await until(
      `${closedDay} closes`,
      async () =>
        (await json<PeriodBody>(await h.call(finance, 'GET', `/finance/periods/${closedDay}`))).body,
      (p) => p.status === 'closed',
      120_000,
    );
    expect(closed.closed_at).not.toBeNull();
    expect(closed.reports.map((r) => r.type)).toEqual([
      'balance.summary',
      'ledger.itemized',
      'reconciliation.itemized',
    ]);
    files = new Map();
    for (const report of closed.reports) {
      const bytes = await download(finance, report.id);
      expect(sha256(bytes)).toBe(report.sha256);
      files.set(report.id, bytes);
    }
    const ledger = closed.reports.find((r) => r.type === 'ledger.itemized')!;
    // Two deposits, a post, a reply (each two or three legs): the day holds them all.
    expect(ledger.row_count).toBeGreaterThanOrEqual(8);
    const reconciliation = files.get(closed.reports.find((r) => r.type === 'reconciliation.itemized')!.id)!;
    expect(reconciliation.toString('utf8')).toContain(',matched,');

    const list = await json<{ periods: PeriodBody[] }>(await h.call(finance, 'GET', '/finance/periods'));
    expect(list.body.periods.find((p) => p.period === closedDay)).toEqual(closed);
    const events = await until(
      'period.closed in the log of finance',
      async () =>
        (
          (await (await h.call(finance2, 'GET', '/events?after=0&limit=100')).json()) as {
            events: AccountEvent[];
          }
        ).events,
      (list) =>
        list.some((e) => e.type === 'period.closed' && (e.data as { period?: string }).period === closedDay),
    );
    // Only closedDay's event: another test's close of a different period may be in the same log.
    expect(
      events.find((e) => e.type === 'period.closed' && (e.data as { period?: string }).period === closedDay)
        ?.data,
    ).toMatchObject({
      period: closedDay,
      status: 'closed',
    });
  });

  test('closing it again answers 200 with the same object', async () => {
    const again = await json<PeriodBody>(
      await h.call(finance2, 'POST', `/finance/periods/${closedDay}/close`, {}),
    );
    expect(again.status).toBe(200);
    expect(again.body).toEqual(closed);
    const otherZone = await h.call(finance, 'POST', `/finance/periods/${closedDay}/close`, {
      timezone: 'Europe/Paris',
    });
    expect(otherZone.status).toBe(409);
  });

  const frozenRequest = (type: string) => ({
    type,
    interval_start: `${closedDay}T00:00:00Z`,
    interval_end: new Date(Date.parse(`${closedDay}T00:00:00Z`) + 86_400_000).toISOString(),
  });

  async function expectFrozenAnswers(): Promise<void> {
    for (const report of closed.reports) {
      for (const who of [finance, finance2]) {
        const asked = await json<{ id: string }>(
          await h.call(who, 'POST', '/reports', frozenRequest(report.type)),
        );
        expect(asked.status).toBe(200);
        expect(asked.body.id).toBe(report.id);
        const run = await json<{ sha256: string; status: string }>(
          await h.call(who, 'GET', `/reports/${report.id}`),
        );
        expect(run.body).toMatchObject({ status: 'succeeded', sha256: report.sha256 });
      }
    }
  }

  test('a run with exactly the frozen parameters, from any finance account, answers the frozen run', async () => {
    await expectFrozenAnswers();
    // Other parameters (another format) are a run of their own.
    const jsonl = await json<{ id: string }>(
      await h.call(finance, 'POST', '/reports', { ...frozenRequest('ledger.itemized'), format: 'jsonl' }),
    );
    expect(jsonl.status).toBe(202);
    expect(closed.reports.map((r) => r.id)).not.toContain(jsonl.body.id);
  });

  test('after a reindex (shipper rewound, everything shipped and checked again) the files are byte-identical and still answered', async () => {
    await rewindShipper(h.env.app.db);
    await ship();
    await sql`UPDATE chain_transactions SET reconciled_commitment = NULL, reconciled_status = NULL, reconciled_at = NULL`.execute(
      h.env.app.db,
    );
    await reconcileAll();
    for (const report of closed.reports) {
      const bytes = await download(finance, report.id);
      expect(bytes.equals(files.get(report.id)!)).toBe(true);
    }
    await expectFrozenAnswers();
    const still = await json<PeriodBody>(await h.call(finance, 'GET', `/finance/periods/${closedDay}`));
    expect(still.body).toEqual(closed);
  });

  test('a verdict that changes after the close lands in the open period as post_close_difference', async () => {
    // The ledger of one payment says more than the chain moved: the next check is amount_mismatch.
    const paid = await sql<{ movement_id: string; signature: string }>`
      SELECT c.movement_id, c.signature FROM chain_transactions c
        JOIN ledger_movements m ON m.id = c.movement_id
       WHERE m.kind = 'post' ORDER BY c.created_at LIMIT 1`.execute(h.env.app.db);
    const { movement_id: movementId, signature } = paid.rows[0]!;
    await sql`UPDATE ledger_legs SET amount = amount * 2 WHERE movement_id = ${movementId}`.execute(
      h.env.app.db,
    );
    await sql`UPDATE chain_transactions SET reconciled_commitment = NULL, reconciled_status = NULL
               WHERE movement_id = ${movementId}`.execute(h.env.app.db);
    await reconcileAll();
    const today = new Date().toISOString().slice(0, 10);
    const result = await h.env.app.clickhouse.client.query({
      query: `SELECT toString(ledger_day) AS day, status, detail FROM ${h.env.app.clickhouse.table('reconciliation')} FINAL
               WHERE signature = {signature:String} ORDER BY ledger_day`,
      query_params: { signature },
      format: 'JSONEachRow',
    });
    const rows = await result.json<{ day: string; status: string; detail: string }>();
    expect(rows).toEqual([
      expect.objectContaining({ day: closedDay, status: 'amount_mismatch' }),
      expect.objectContaining({ day: today, status: 'post_close_difference' }),
    ]);
    expect(rows[1]!.detail).toContain(`${closedDay} closed with matched; now amount_mismatch`);
    const events = await until(
      'post_close_difference told to finance',
      async () =>
        (
          (await (await h.call(finance, 'GET', '/events?after=0&limit=100')).json()) as {
            events: AccountEvent[];
          }
        ).events,
      (list) =>
        list.some((e) => e.type === 'reconciliation.exception' && e.data.verdict === 'post_close_difference'),
    );
    expect(events.some((e) => e.data.swap_tx === signature)).toBe(true);
    // The closed period's files did not change.
    for (const report of closed.reports) {
      expect((await download(finance, report.id)).equals(files.get(report.id)!)).toBe(true);
    }
    // Put the ledger back for the tests after this one.
    await sql`UPDATE ledger_legs SET amount = amount / 2 WHERE movement_id = ${movementId}`.execute(
      h.env.app.db,
    );
  });

  test('reopening needs the admin role and writes period.reopened', async () => {
    const refused = await json<{ error: string }>(
      await h.call(finance, 'POST', `/finance/periods/${closedDay}/reopen`),
    );
    expect(refused.status).toBe(403);
    const reopened = await json<PeriodBody>(
      await h.call(admin, 'POST', `/finance/periods/${closedDay}/reopen`),
    );
    expect(reopened.status).toBe(200);
    expect(reopened.body).toMatchObject({ period: closedDay, status: 'open', closed_at: null, reports: [] });
    const events = await until(
      'period.reopened in the log of the admin',
      async () =>
        (
          (await (await h.call(admin, 'GET', '/events?after=0&limit=100')).json()) as {
            events: AccountEvent[];
          }
        ).events,
      (list) => list.some((e) => e.type === 'period.reopened'),
    );
    expect(events.find((e) => e.type === 'period.reopened')!.data).toMatchObject({
      period: closedDay,
      reopened_by: 'fp_admin',
    });
    expect((await h.call(admin, 'POST', `/finance/periods/${closedDay}/reopen`)).status).toBe(409);
    // No longer frozen: the same parameters start a run of their own.
    const fresh = await json<{ id: string }>(
      await h.call(finance2, 'POST', '/reports', frozenRequest('balance.summary')),
    );
    expect(fresh.status).toBe(202);
    expect(closed.reports.map((r) => r.id)).not.toContain(fresh.body.id);
  });
});

describe('GraphQL', () => {
  test('financePeriod and financePeriods answer what REST answers; closePeriod refuses as REST does', async () => {
    const one = await h.gql(
      finance,
      `query($p: String!) { financePeriod(period: $p) { period status closedAt reports { type id sha256 rowCount } } }`,
      {
        p: closedDay,
      },
    );
    expect(one.errors).toBeUndefined();
    expect(one.data.financePeriod).toMatchObject({ period: closedDay, status: 'OPEN' });
    const list = await h.gql(finance, `{ financePeriods { period status } }`);
    expect(list.data.financePeriods).toContainEqual({ period: closedDay, status: 'OPEN' });
    const blocked = await h.gql(
      finance,
      `mutation($p: String!) { closePeriod(period: $p) { period status } }`,
      {
        p: blockedDay,
      },
    );
    expect(blocked.errors?.[0]?.extensions).toMatchObject({
      code: 'CLOSE_BLOCKED',
      blockers: [
        { status: 'missing', count: 2 },
        { status: 'unexplained', count: 1 },
      ],
    });
    const reopen = await h.gql(finance, `mutation($p: String!) { reopenPeriod(period: $p) { status } }`, {
      p: closedDay,
    });
    expect(reopen.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});
