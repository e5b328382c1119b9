import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { insertOrFindLiveRun } from '../src/adapters/postgres/report-runs.repository.js';
import { createRateLimiter } from '../src/adapters/redis/rate-limiter.js';
import { recordRequest } from '../src/api/request-record.js';
import { buildServer } from '../src/api/server.js';
import { issueFileLink } from '../src/app/reports/report-file-links.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { REPORT_COLUMNS } from '../src/domain/reports/report-kinds.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { until } from './support/until.js';

/**
 * Download links of report files (docs/reports.md "Download links", docs/security.md): POST
 * /reports/{id}/file-link answers a short-lived signed URL that GET /reports/{id}/file answers
 * without an API key, byte for byte as the keyed download; a link that is tampered, another run's,
 * expired or no longer backed by the account's access is 403; issuing one follows the keyed
 * download's rules (404 for another account's run, 409 before the run succeeded).
 */
let h: ServiceHarness;
let alice: Member;
let bob: Member;
let runA: RunBody;
let runB: RunBody;

interface RunBody {
  id: string;
  status: string;
  bytes: number | null;
  sha256: string | null;
  file_url: string | null;
}
interface LinkBody {
  url: string;
  expires_at: string;
  error?: string;
  message?: string;
}

const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
const LINK = /^\/api\/v1\/reports\/([0-9a-f-]{36})\/file\?expires=(\d+)&signature=([0-9a-f]{64})$/;

async function succeededRun(who: Member, body: Record<string, unknown>): Promise<RunBody> {
  const asked = await h.call(who, 'POST', '/reports', body);
  expect(asked.status, await asked.clone().text()).toBe(202);
  const { id } = (await asked.json()) as { id: string };
  const run = await until(
    `report ${id} ends`,
    async () => (await h.call(who, 'GET', `/reports/${id}`)).json() as Promise<RunBody>,
    (r) => r.status === 'succeeded' || r.status === 'failed',
    60_000,
  );
  expect(run.status).toBe('succeeded');
  return run;
}

async function linkFor(who: Member, id: string): Promise<{ status: number; body: LinkBody }> {
  const response = await h.call(who, 'POST', `/reports/${id}/file-link`);
  return { status: response.status, body: (await response.json()) as LinkBody };
}

const asCaller = (who: Member) => ({ accountId: who.account.id, role: who.account.role });

/** A GET of a link as a browser navigates to it: no Authorization header. */
const open = (url: string, base = h.base) => fetch(`${base}${url}`);

async function refusal(response: Response): Promise<{ status: number; error: string; message: string }> {
  const body = (await response.json()) as { error: string; message: string };
  return { status: response.status, ...body };
}

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  alice = await h.member('link_alice', 0n);
  bob = await h.member('link_bob', 0n);
  const statement = { type: 'account.statement', interval_start: day(3), interval_end: day(0) };
  runA = await succeededRun(alice, statement);
  runB = await succeededRun(alice, { ...statement, format: 'jsonl' });
});
afterAll(async () => {
  await h?.close();
});

describe('issuing a link', () => {
  test('a succeeded run’s link is 201 with a signed URL to its file, valid for 5 minutes', async () => {
    const before = Date.now();
    const { status, body } = await linkFor(alice, runA.id);
    expect(status).toBe(201);
    const [, id, expires] = LINK.exec(body.url) ?? [];
    expect(id).toBe(runA.id);
    expect(new Date(body.expires_at).getTime()).toBe(Number(expires) * 1000);
    const lifetime = new Date(body.expires_at).getTime() - before;
    expect(lifetime).toBeGreaterThan(299_000 - 1_000);
    expect(lifetime).toBeLessThanOrEqual(300_000);
  });

  test('a run not yet succeeded is 409 conflict', async () => {
    const { run } = await insertOrFindLiveRun(h.env.app.db, {
      accountId: alice.account.id,
      type: 'account.statement',
      intervalStart: new Date(`${day(9)}T00:00:00Z`),
      intervalEnd: new Date(`${day(8)}T00:00:00Z`),
      timezone: 'UTC',
      columns: REPORT_COLUMNS['account.statement'],
      format: 'csv',
      subjectAccountId: alice.account.id,
      paramsHash: `link-test-${Date.now()}`,
    });
    const { status, body } = await linkFor(alice, run.id);
    expect(status).toBe(409);
    expect(body.error).toBe('conflict');
  });

  test('another account’s run and a malformed id are 404, as GET /reports/{id} answers', async () => {
    const theirs = await linkFor(bob, runA.id);
    const read = await h.call(bob, 'GET', `/reports/${runA.id}`);
    expect([theirs.status, read.status]).toEqual([404, 404]);
    expect(theirs.body).toEqual(await read.json());
    expect((await linkFor(bob, 'not-a-uuid')).status).toBe(404);
  });

  test('without a key it is 401; a key without read is 403', async () => {
    expect((await fetch(`${h.base}/api/v1/reports/${runA.id}/file-link`, { method: 'POST' })).status).toBe(
      401,
    );
    const { key } = await createApiKey(h.env.app.apiKeys, alice.account.id, ['post']);
    expect((await linkFor({ ...alice, key }, runA.id)).status).toBe(403);
  });

  test('GraphQL reportFileLink answers the same kind of link; another account’s run is NOT_FOUND', async () => {
    const query = 'mutation ($id: ID!) { reportFileLink(id: $id) { url expiresAt } }';
    const mine = await h.gql(alice, query, { id: runA.id });
    expect(mine.errors).toBeUndefined();
    const link = mine.data.reportFileLink as { url: string; expiresAt: string };
    expect(link.url).toMatch(LINK);
    const file = await open(link.url);
    expect(file.status).toBe(200);
    expect(
      createHash('sha256')
        .update(Buffer.from(await file.arrayBuffer()))
        .digest('hex'),
    ).toBe(runA.sha256);
    const theirs = await h.gql(bob, query, { id: runA.id });
    expect(theirs.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });
});

describe('downloading through a link', () => {
  test('answers the bytes and headers of the keyed download, without a key', async () => {
    const keyed = await h.call(alice, 'GET', `/reports/${runA.id}/file`);
    expect(keyed.status).toBe(200);
    const keyedBytes = Buffer.from(await keyed.arrayBuffer());

    const { body } = await linkFor(alice, runA.id);
    const linked = await open(body.url);
    expect(linked.status).toBe(200);
    const bytes = Buffer.from(await linked.arrayBuffer());
    expect(bytes.equals(keyedBytes)).toBe(true);
    expect(bytes.length).toBe(runA.bytes);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(runA.sha256);
    for (const name of ['content-type', 'content-length', 'content-disposition', 'x-content-sha256']) {
      expect(linked.headers.get(name), name).toBe(keyed.headers.get(name));
    }
    expect(linked.headers.get('x-content-sha256')).toBe(runA.sha256);
    expect(linked.headers.get('content-disposition')).toMatch(/^attachment; filename=".+\.csv"$/);
    expect(linked.headers.get('cache-control')).toBe('private, no-store');
    // The link may be used again until it expires (a download restarted).
    expect((await open(body.url)).status).toBe(200);
  });

  test('an expired link is 403 forbidden, saying so', async () => {
    const past = new Date(Date.now() - 10 * 60_000);
    const expired = await issueFileLink(h.env.app, asCaller(alice), runA.id, { now: past });
    expect(expired.url).toMatch(LINK);
    const answer = await refusal(await open(expired.url));
    expect(answer).toMatchObject({ status: 403, error: 'forbidden' });
    expect(answer.message).toContain('expired');
    // Expiring at this very second is expired too.
    const now = await issueFileLink(h.env.app, asCaller(alice), runA.id, { lifetimeSeconds: 0 });
    expect((await open(now.url)).status).toBe(403);
  });

  test('a tampered signature or expiry, or a link of run A used on run B, is 403 and names nothing', async () => {
    const { body } = await linkFor(alice, runA.id);
    const [, , expires, signature] = LINK.exec(body.url)!;
    const flipped = `${signature!.slice(0, -1)}${signature!.endsWith('0') ? '1' : '0'}`;
    const tries = [
      body.url.replace(signature!, flipped),
      body.url.replace(`expires=${expires}`, `expires=${Number(expires) + 3600}`),
      body.url.replace(runA.id, runB.id),
      body.url.replace(signature!, signature!.toUpperCase()),
      body.url.replace(signature!, 'zz'),
      `${body.url}&account=${bob.account.id}`,
      body.url.replace(runA.id, '00000000-0000-4000-8000-000000000000'),
      body.url.replace(runA.id, 'not-a-uuid'),
    ];
    const answers = await Promise.all(tries.map(async (url) => refusal(await open(url))));
    for (const [i, answer] of answers.entries()) {
      expect(answer, tries[i]).toMatchObject({ status: 403, error: 'forbidden' });
      expect(answer.message, tries[i]).toBe(answers[0]!.message);
    }
    expect(answers[0]!.message).not.toContain('expired');
    // Run B opens with a link of its own.
    const b = await linkFor(alice, runB.id);
    const fileB = await open(b.body.url);
    expect(
      createHash('sha256')
        .update(Buffer.from(await fileB.arrayBuffer()))
        .digest('hex'),
    ).toBe(runB.sha256);
  });

  test('neither a key nor a signature is the usual 401; with a key the route answers as it always did', async () => {
    const bare = await refusal(await open(`/api/v1/reports/${runA.id}/file`));
    expect(bare).toMatchObject({ status: 401, error: 'unauthorized' });
    const expiresOnly = await open(
      `/api/v1/reports/${runA.id}/file?expires=${Math.floor(Date.now() / 1000) + 60}`,
    );
    expect(expiresOnly.status).toBe(401);
    // A key is judged by itself, link or no link: bob's key with alice's valid link is 404.
    const { body } = await linkFor(alice, runA.id);
    const withKey = await fetch(`${h.base}${body.url}`, { headers: { authorization: `Bearer ${bob.key}` } });
    expect(withKey.status).toBe(404);
    const withBadKey = await fetch(`${h.base}${body.url}`, {
      headers: { authorization: 'Bearer lf_live_x' },
    });
    expect(withBadKey.status).toBe(401);
  });

  test('a closed period’s run: another finance account’s link names it, and dies with its role', async () => {
    const app = h.env.app;
    const finance = async (handle: string): Promise<Member> => {
      const account = await createAccount(app, { handle, role: 'finance' });
      return { account, key: (await createApiKey(app.apiKeys, account.id)).key };
    };
    const asker = await finance('link_fin_a');
    const other = await finance('link_fin_b');
    const run = await succeededRun(asker, {
      type: 'account.statement',
      interval_start: day(5),
      interval_end: day(4),
    });
    await sql`INSERT INTO finance_periods (period, timezone, period_start, period_end, status, closed_at, balance_run_id)
      VALUES ('2020-01', 'UTC', '2020-01-01T00:00:00Z', '2020-02-01T00:00:00Z', 'closed', now(), ${run.id})`.execute(
      app.db,
    );
    const { status, body } = await linkFor(other, run.id);
    expect(status).toBe(201);
    expect(body.url).toBe(`${body.url.slice(0, body.url.indexOf('&account='))}&account=${other.account.id}`);
    const file = await open(body.url);
    expect(file.status).toBe(200);
    expect(
      createHash('sha256')
        .update(Buffer.from(await file.arrayBuffer()))
        .digest('hex'),
    ).toBe(run.sha256);
    // The asker's own link names no account; a link without its account is not the other's.
    expect((await linkFor(asker, run.id)).body.url).toMatch(LINK);
    expect((await open(body.url.slice(0, body.url.indexOf('&account=')))).status).toBe(403);
    // Access is judged as it is now: once the other account is no finance account, its link opens nothing.
    await sql`UPDATE accounts SET role = 'user' WHERE id = ${other.account.id}`.execute(app.db);
    await until(
      'the link refused once the role is gone',
      async () => (await open(body.url)).status,
      (s) => s === 403,
      15_000,
    );
  });
});

describe('rate limits and logs', () => {
  test('a link’s download spends the read bucket of the account it was issued to', async () => {
    const app = h.env.app;
    const limited = {
      ...app,
      rateLimiter: createRateLimiter(app.redis, {
        prefix: `${app.config.REDIS_PREFIX}links:`,
        multiplier: 1,
      }),
    };
    const server: FastifyInstance = await buildServer(limited, { queueBoard: false });
    const base = await server.listen({ port: 0, host: '127.0.0.1' });
    try {
      const remaining = (response: Response) =>
        Number(/;r=(\d+);/.exec(response.headers.get('ratelimit') ?? '')?.[1] ?? Number.NaN);
      const keyed = await fetch(`${base}/api/v1/reports/${runA.id}`, {
        headers: { authorization: `Bearer ${alice.key}` },
      });
      // Every body read: an answer left unread keeps its connection busy, and close() waits for it.
      await keyed.arrayBuffer();
      const issued = await fetch(`${base}/api/v1/reports/${runA.id}/file-link`, {
        method: 'POST',
        headers: { authorization: `Bearer ${alice.key}` },
      });
      const { url } = (await issued.json()) as LinkBody;
      const linked = await open(url, base);
      expect(linked.status).toBe(200);
      await linked.arrayBuffer();
      const after = await fetch(`${base}/api/v1/reports/${runA.id}`, {
        headers: { authorization: `Bearer ${alice.key}` },
      });
      await after.arrayBuffer();
      expect(remaining(keyed)).toBeGreaterThan(3);
      // One bucket, alice's: the GET, the link, the download and the GET after, one each.
      expect([remaining(issued), remaining(linked), remaining(after)]).toEqual([
        remaining(keyed) - 1,
        remaining(keyed) - 2,
        remaining(keyed) - 3,
      ]);
    } finally {
      server.server.closeAllConnections();
      await server.close();
    }
  });

  test('the request log line hides a link’s signature', () => {
    const lines: string[] = [];
    const signature = 'ab'.repeat(32);
    recordRequest(
      { metrics: { httpRequests: { observe: () => undefined } } } as never,
      { level: 'info', info: (line) => lines.push(line) },
      {
        method: 'GET',
        url: `/api/v1/reports/${runA.id}/file?expires=1767225600&signature=${signature}`,
        route: '/api/v1/reports/:id/file',
        status: 200,
        elapsedMs: 1,
      },
    );
    expect(lines).toEqual([`GET /api/v1/reports/${runA.id}/file?expires=1767225600&signature=*** 200 1.0ms`]);
  });
});
