import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { PlatformChain } from '../src/adapters/solana/index.js';
import { buildServer } from '../src/api/server.js';
import { EXCEPTION_CURSOR_SCOPE, reconciliationExceptions } from '../src/app/analytics/analytics-reads.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { followFinality } from '../src/app/write-path/finality-follow.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { encodeSignedCursor } from '../src/domain/pagination/signed-cursor.js';
import { fundedAccount } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { missingVerdict } from './support/verdict-rows.js';

/**
 * Finance sees finality (issue 38): the reconciliation summary counts each day's payments by outbox
 * state, and a payment the outbox has not seen finalized 5 minutes after it was signed is the
 * exception `not_finalized`, in GraphQL and in the REST report. No worker runs here: the test
 * moves each payment itself (settlePayment to confirmed, a finality follower round to finalized)
 * and makes a payment 5 minutes old by writing its outbox row's created_at back.
 */
let env: TestEnv;
let platform: PlatformChain;
let server: FastifyInstance;
let financeKey: string;
const quiet = pino({ level: 'silent' });

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
  server = await buildServer(env.app, { queueBoard: false });
  const finance = await createAccount(env.app, { handle: 'ff_books', role: 'finance' });
  financeKey = (await createApiKey(env.app.apiKeys, finance.id)).key;
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** Every day a payment of this file can be on: written back up to 2 days, and a midnight may pass. */
const range = () => ({ from: utcDay(Date.now() - 3 * 86_400_000), to: utcDay(Date.now()) });

async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const response = await server.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${financeKey}`, 'content-type': 'application/json' },
    payload: { query, variables },
  });
  const body = response.json<{ data?: T; errors?: unknown[] }>();
  expect(body.errors).toBeUndefined();
  return body.data!;
}

/** The REST report's fields these tests read. */
interface Report {
  payment_counts: Record<string, number>;
  exception_counts: Record<string, number>;
  exceptions: Array<Record<string, unknown>>;
}

async function report(day: string): Promise<Report> {
  const response = await server.inject({
    method: 'GET',
    url: `/api/v1/finance/reconciliation?date=${day}`,
    headers: { authorization: `Bearer ${financeKey}` },
  });
  expect(response.statusCode).toBe(200);
  return response.json<Report>();
}

/** The range's payments by outbox state and its not_finalized count, summed over its days. */
async function counts() {
  const { reconciliationSummary: days } = await gql<{
    reconciliationSummary: Array<{ payments: Record<string, number>; exceptions: { notFinalized: number } }>;
  }>(
    `query ($from: String!, $to: String!) { reconciliationSummary(from: $from, to: $to) {
       day payments { pending confirmed finalized failed } exceptions { notFinalized } } }`,
    range(),
  );
  const total = { pending: 0, confirmed: 0, finalized: 0, failed: 0, notFinalized: 0 };
  for (const d of days) {
    for (const state of ['pending', 'confirmed', 'finalized', 'failed'] as const)
      total[state] += d.payments[state]!;
    total.notFinalized += d.exceptions.notFinalized;
  }
  return total;
}

const outbox = (id: string) =>
  env.app.db
    .selectFrom('chain_transactions')
    .select(['signature', 'movement_id', 'status'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

/** Moves the outbox row's signing time `ms` back; returns its (new) UTC day. */
async function signedAgo(id: string, ms: number): Promise<string> {
  // Raw SQL: created_at is written once by the insert, and the table's type says so.
  const { rows } = await sql<{ day: string }>`
    UPDATE chain_transactions SET created_at = created_at - make_interval(secs => ${ms / 1000})
     WHERE id = ${id}
    RETURNING to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day`.execute(env.app.db);
  return rows[0]!.day;
}

/** Lets the localnet finalize what landed, then runs one finality follower round. */
async function finalizeLanded() {
  env.localnet!.chain.warp(40);
  return followFinality({ ...env.app, logger: quiet }, new Set(), { minAgeMs: 0 });
}

const NOT_FINALIZED_PAGE = `query ($status: ReconciliationStatus, $after: String) {
  reconciliationExceptions(status: $status, first: 1, after: $after) {
    edges { node { signature status commitment ledgerAmountUsdMicro chainAmountUsdMicro detail } }
    pageInfo { hasNextPage endCursor } } }`;

/** Every exception (or every one of `status`), paged one at a time through the cursors. */
async function allExceptions(status?: string) {
  const seen: Array<Record<string, string>> = [];
  let after: string | undefined;
  for (let page = 0; page < 20; page++) {
    const { reconciliationExceptions: connection } = await gql<{
      reconciliationExceptions: {
        edges: Array<{ node: Record<string, string> }>;
        pageInfo: { hasNextPage: boolean; endCursor: string };
      };
    }>(NOT_FINALIZED_PAGE, {
      status: status ?? null,
      after: after ?? null,
    });
    seen.push(...connection.edges.map((edge) => edge.node));
    if (!connection.pageInfo.hasNextPage) return seen;
    after = connection.pageInfo.endCursor;
  }
  throw new Error('more than 20 pages');
}

describe('payments by outbox state', () => {
  test('the summary counts a payment as pending, then confirmed, then finalized, in GraphQL and REST', async () => {
    const payer = await fundedAccount(env.app, platform, 'ff_payer', 5_000_000n);
    const post = await commitPost(env.app, payer.id, { type: 'post', content: 'followed by finance' });
    expect(await counts()).toEqual({ pending: 1, confirmed: 0, finalized: 0, failed: 0, notFinalized: 0 });

    expect(await settlePayment(env.app, post.chainTransactionId)).toBe('confirmed');
    expect(await counts()).toEqual({ pending: 0, confirmed: 1, finalized: 0, failed: 0, notFinalized: 0 });

    expect((await finalizeLanded()).finalized).toBe(1);
    expect(await counts()).toEqual({ pending: 0, confirmed: 0, finalized: 1, failed: 0, notFinalized: 0 });

    // The REST report of the payment's day says the same, beside its unchanged fields.
    const day = await signedAgo(post.chainTransactionId, 0);
    const body = await report(day);
    expect(body.payment_counts).toEqual({ pending: 0, confirmed: 0, finalized: 1, failed: 0 });
    expect(body.exception_counts).toMatchObject({ not_finalized: 0, missing: 0 });
    expect(body.exceptions).toEqual([]);
  });
});

describe('not_finalized', () => {
  test('payments not finalized 5 minutes after signing are exceptions, listed day by day before the verdicts, until finalized', async () => {
    const payer = await fundedAccount(env.app, platform, 'ff_stuck', 10_000_000n);
    const pay = (content: string) => commitPost(env.app, payer.id, { type: 'post', content });
    // Confirmed, signed 6 minutes ago; never sent, signed 2 days ago; confirmed a moment ago.
    const confirmedOld = await pay('confirmed, never finalized');
    const signedOld = await pay('never sent');
    const fresh = await pay('confirmed just now');
    for (const p of [confirmedOld, fresh])
      expect(await settlePayment(env.app, p.chainTransactionId)).toBe('confirmed');
    const today = await signedAgo(confirmedOld.chainTransactionId, 6 * 60_000);
    const older = await signedAgo(signedOld.chainTransactionId, 2 * 86_400_000);
    // The finalized payment of the test before, 6 minutes old too: finalized is never an exception.
    const [finalized] = await env.app.db
      .selectFrom('chain_transactions')
      .select('id')
      .where('status', '=', 'finalized')
      .execute();
    await signedAgo(finalized!.id, 6 * 60_000);

    const stuck = await outbox(confirmedOld.chainTransactionId);
    const unsent = await outbox(signedOld.chainTransactionId);
    // The reconciler's verdicts of each day (ClickHouse), to page through beside them.
    const verdict = (day: string, signature: string) =>
      missingVerdict(randomUUID(), signature, day, '2026-11-27 00:00:00.000');
    await env.app.clickhouse.insertRows('reconciliation', [
      verdict(today, 'verdict-today'),
      verdict(older, 'verdict-older'),
    ]);

    expect(await counts()).toMatchObject({ pending: 1, confirmed: 2, finalized: 1, notFinalized: 2 });
    const listed = await allExceptions('NOT_FINALIZED');
    expect(listed).toEqual([
      {
        signature: stuck.signature,
        status: 'NOT_FINALIZED',
        commitment: 'confirmed',
        ledgerAmountUsdMicro: '1000000',
        chainAmountUsdMicro: '0',
        detail: expect.stringMatching(
          /^not finalized 3\d\d s after signing \(outbox: confirmed\)$/,
        ) as unknown,
      },
      {
        signature: unsent.signature,
        status: 'NOT_FINALIZED',
        commitment: '',
        ledgerAmountUsdMicro: '1000000',
        chainAmountUsdMicro: '0',
        detail: expect.stringContaining('(outbox: signed)') as unknown,
      },
    ]);
    // Unfiltered, one a page: newest day first, the day's outbox exceptions before its verdicts.
    expect((await allExceptions()).map((row) => [row.signature, row.status])).toEqual([
      [stuck.signature, 'NOT_FINALIZED'],
      ['verdict-today', 'MISSING'],
      [unsent.signature, 'NOT_FINALIZED'],
      ['verdict-older', 'MISSING'],
    ]);

    const rest = await report(older);
    expect(rest.exception_counts).toMatchObject({ not_finalized: 1, missing: 1 });
    expect(rest.payment_counts).toEqual({ pending: 1, confirmed: 0, finalized: 0, failed: 0 });
    expect(rest.exceptions.map((row) => [row.signature, row.status])).toEqual([
      [unsent.signature, 'not_finalized'],
      ['verdict-older', 'missing'],
    ]);
    expect(rest.exceptions[0]).toMatchObject({
      movement_id: unsent.movement_id,
      ledger_amount_usd: 1,
      chain_amount_usd: 0,
      commitment: '',
    });

    // Sent and followed to finalized, both leave the list and the count.
    expect(await settlePayment(env.app, signedOld.chainTransactionId)).toBe('confirmed');
    expect((await finalizeLanded()).finalized).toBe(3);
    expect(await allExceptions('NOT_FINALIZED')).toEqual([]);
    expect(await counts()).toEqual({ pending: 0, confirmed: 0, finalized: 4, failed: 0, notFinalized: 0 });
    const after = await reconciliationExceptions(env.app, { first: 10 });
    expect(after.rows.map((row) => row.signature)).toEqual(['verdict-today', 'verdict-older']);
  });

  test('a crafted outbox cursor is refused like any other', async () => {
    // Signed with the deployment's secret (it may be a public default): the values are checked too.
    const cursor = (position: unknown[]) =>
      encodeSignedCursor(env.app.cursorSecret, EXCEPTION_CURSOR_SCOPE, position);
    const movementId = randomUUID();
    for (const position of [
      ['2026-11-24', movementId, 'sig', 'something_else'],
      ['2026-11-24', movementId, 'sig', 'not_finalized', 'extra'],
    ]) {
      await expect(reconciliationExceptions(env.app, { first: 1, after: cursor(position) })).rejects.toThrow(
        'after is not a cursor this API gave out',
      );
    }
    const valid = await reconciliationExceptions(env.app, {
      first: 1,
      after: cursor(['2026-11-24', movementId, 'sig', 'not_finalized']),
    });
    expect(valid.rows).toEqual([]);
  });
});
