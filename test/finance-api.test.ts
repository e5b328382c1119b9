import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { shipBatch } from '../src/app/indexer/event-shipper.js';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import type { Scope } from '../src/domain/auth/api-key.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { shortChangedPost } from './support/chain-tampering.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';

/**
 * What finance and creators read, end to end: paid engagement through REST, the worker settling
 * it, the shipper and the reconciler filling ClickHouse, then the GraphQL reads and the REST
 * report (JSON and CSV), with their role rules.
 */
let h: ServiceHarness;
let finance: Member;
let author: Member;
let fan: Member;
let postId: string;
let tamperedSignature: string;
const today = new Date().toISOString().slice(0, 10);

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  const app = h.env.app;
  const financeAccount = await createAccount(app, { handle: 'fin_officer', role: 'finance' });
  finance = { account: financeAccount, key: (await createApiKey(app.apiKeys, financeAccount.id)).key };
  author = await h.member('fin_author', 5_000_000n);
  fan = await h.member('fin_fan', 10_000_000n);

  const created = await h.call(author, 'POST', '/posts', { content: 'worth a dollar', type: 'post' });
  postId = ((await created.json()) as { id: string }).id;
  for (const body of [
    { content: 'first reply', type: 'reply', parent_id: postId },
    { content: 'second reply', type: 'reply', parent_id: postId },
    { content: 'a quote', type: 'quote', quoted_post_id: postId },
  ]) {
    expect((await h.call(fan, 'POST', '/posts', body)).status).toBe(201);
  }
  expect((await h.call(fan, 'POST', `/posts/${postId}/repost`)).status).toBe(201);
  expect((await h.call(fan, 'POST', `/posts/${postId}/like`)).status).toBe(200);

  // One payment whose on-chain amount differs from its ledger legs (a signing bug, say).
  tamperedSignature = (await shortChangedPost(app, h.platform, fan.account)).signature;

  await paymentsSettled(app.db);
  await reconcileRound(app, { missingAfterMs: 600_000, limit: 1_000 });
  for (;;) {
    const shipped = await shipBatch(app);
    if (shipped.events === 0 && shipped.legs === 0) break;
  }
});
afterAll(async () => {
  await h?.close();
});

describe('finance reads', () => {
  test('reconciliationSummary: the day matches to the cent, with the tampered payment as the one exception', async () => {
    const { data, errors } = await h.gql(
      finance,
      `query ($day: String!) { reconciliationSummary(from: $day, to: $day) {
         day ledgerTotalUsdMicro chainTotalUsdMicro matched
         exceptions { amountMismatch wrongParty failedOnChain missing pending unexplained } } }`,
      { day: today },
    );
    expect(errors).toBeUndefined();
    expect(data.reconciliationSummary).toEqual([
      {
        day: today,
        // 5 matched dollars (post, 2 replies, quote, repost) + the tampered one: $1 in the ledger, $0.60 on chain.
        ledgerTotalUsdMicro: '6000000',
        chainTotalUsdMicro: '5600000',
        matched: 5,
        exceptions: {
          amountMismatch: 1,
          wrongParty: 0,
          failedOnChain: 0,
          missing: 0,
          pending: 0,
          unexplained: 0,
        },
      },
    ]);
    const refused = await h.gql(
      fan,
      '{ reconciliationSummary(from: "2026-01-01", to: "2026-01-02") { day } }',
    );
    expect(refused.errors?.[0]?.extensions.code).toBe('FORBIDDEN');
  });

  test('reconciliationExceptions lists the tampered payment; chainTransaction drills into its movements', async () => {
    const { data } = await h.gql(
      finance,
      `{ reconciliationExceptions(status: AMOUNT_MISMATCH, first: 10) {
           edges { node { signature status ledgerAmountUsdMicro chainAmountUsdMicro detail } }
           pageInfo { hasNextPage } } }`,
    );
    expect(data.reconciliationExceptions.edges).toEqual([
      {
        node: expect.objectContaining({
          signature: tamperedSignature,
          status: 'AMOUNT_MISMATCH',
          ledgerAmountUsdMicro: '1000000',
          chainAmountUsdMicro: '600000',
        }),
      },
    ]);
    const drill = await h.gql(
      finance,
      `query ($sig: String!) { chainTransaction(signature: $sig) {
         status movements { owner amount } reconciliation { status } } }`,
      { sig: tamperedSignature },
    );
    expect(drill.data.chainTransaction).toEqual({
      status: 'success',
      movements: [
        { owner: fan.account.walletAddress, amount: '-600000' },
        { owner: h.platform.signers.treasury.publicKey.toBase58(), amount: '600000' },
      ],
      reconciliation: { status: 'AMOUNT_MISMATCH' },
    });
    const bad = await h.gql(
      finance,
      '{ reconciliationExceptions(first: 10, after: "forged") { edges { cursor } } }',
    );
    expect(bad.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
  });

  test('GET /finance/reconciliation: JSON for finance, CSV with Accept: text/csv, 403 for others, 400 for a bad date', async () => {
    const json = await h.call(finance, 'GET', `/finance/reconciliation?date=${today}`);
    expect(json.status).toBe(200);
    const report = (await json.json()) as Record<string, any>;
    expect(report).toMatchObject({
      date: today,
      ledger_total_usd: 6,
      chain_total_usd: 5.6,
      matched: 5,
      exception_counts: { amount_mismatch: 1, wrong_party: 0, missing: 0 },
      has_more: false,
    });
    expect(report.exceptions).toEqual([
      expect.objectContaining({
        signature: tamperedSignature,
        status: 'amount_mismatch',
        chain_amount_usd: 0.6,
      }),
    ]);

    const csv = await h.call(finance, 'GET', `/finance/reconciliation?date=${today}`, undefined, {
      accept: 'text/csv',
    });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = (await csv.text()).trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'ledger_day,movement_id,signature,status,ledger_amount_usd,chain_amount_usd,commitment,detail,checked_at',
    );
    expect(lines).toHaveLength(1 + 6);
    expect(lines.filter((line) => line.includes(',matched,'))).toHaveLength(5);
    expect(lines.find((line) => line.includes(tamperedSignature))).toContain(',amount_mismatch,1,0.6,');

    expect((await h.call(fan, 'GET', `/finance/reconciliation?date=${today}`)).status).toBe(403);
    const bad = await h.call(finance, 'GET', '/finance/reconciliation?date=yesterday');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: 'invalid_request' });
  });

  test("a finance account's key without `read` reads none of the finance fields; a `read` key reads them all", async () => {
    // REST has always asked `read` of GET /finance/reconciliation; GraphQL asked only the role.
    const delegator = await createAccount(h.env.app, { handle: 'fin_delegator', role: 'finance' });
    const keyWith = async (scopes: Scope[]): Promise<Member> => ({
      account: delegator,
      key: (await createApiKey(h.env.app.apiKeys, delegator.id, scopes)).key,
    });
    const engageOnly = await keyWith(['engage']);
    const readOnly = await keyWith(['read']);
    const fields = {
      reconciliationSummary: `{ reconciliationSummary(from: "${today}", to: "${today}") { day matched } }`,
      reconciliationExceptions: '{ reconciliationExceptions(first: 10) { edges { node { signature } } } }',
      chainTransaction: `{ chainTransaction(signature: "${tamperedSignature}") { status } }`,
    };
    for (const [field, query] of Object.entries(fields)) {
      const refused = await h.gql(engageOnly, query);
      expect(refused.data?.[field] ?? null, field).toBeNull();
      expect(refused.errors, field).toEqual([
        expect.objectContaining({
          message: "API key lacks the 'read' scope",
          path: [field],
          extensions: { code: 'FORBIDDEN' },
        }),
      ]);
      const read = await h.gql(readOnly, query);
      expect(read.errors, field).toBeUndefined();
      expect(read.data[field], field).toBeTruthy();
    }
    const rest = await h.call(engageOnly, 'GET', `/finance/reconciliation?date=${today}`);
    expect(rest.status).toBe(403);
    expect(await rest.json()).toEqual({ error: 'forbidden', message: "API key lacks the 'read' scope" });
  });
});

describe('payments by outbox state', () => {
  const query = `query ($day: String!) { reconciliationSummary(from: $day, to: $day) {
    payments { pending confirmed finalized failed } exceptions { notFinalized } } }`;
  const countsToday = async () => {
    const { data, errors } = await h.gql(finance, query, { day: today });
    expect(errors).toBeUndefined();
    return data.reconciliationSummary[0] as {
      payments: { pending: number; confirmed: number; finalized: number; failed: number };
      exceptions: { notFinalized: number };
    };
  };
  /** Polls the day's counts until `done`, up to 60 s (test slots are 100 ms: finality is ~3 s away). */
  const countsWhen = async (done: (c: Awaited<ReturnType<typeof countsToday>>) => boolean) => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const counts = await countsToday();
      if (done(counts)) return counts;
      if (Date.now() > deadline) throw new Error(`not within 60 s; last: ${JSON.stringify(counts)}`);
      await sleep(250);
    }
  };

  test("the worker's finality follower takes the day's payments to finalized, and the counts follow, in GraphQL and REST", async () => {
    // The six payments of beforeAll (post, 2 replies, quote, repost, the tampered post).
    expect(await countsWhen((c) => c.payments.finalized === 6)).toEqual({
      payments: { pending: 0, confirmed: 0, finalized: 6, failed: 0 },
      exceptions: { notFinalized: 0 },
    });

    const paid = await h.call(fan, 'POST', '/posts', { content: 'counted as it moves', type: 'post' });
    expect(paid.status).toBe(201);
    // Answered once the cluster executed it: finalized is some 32 slots and a follower round away.
    const moving = await countsToday();
    expect(moving.payments.pending + moving.payments.confirmed).toBe(1);
    expect(moving.payments.finalized).toBe(6);

    expect(await countsWhen((c) => c.payments.finalized === 7)).toEqual({
      payments: { pending: 0, confirmed: 0, finalized: 7, failed: 0 },
      exceptions: { notFinalized: 0 },
    });
    const report = (await (
      await h.call(finance, 'GET', `/finance/reconciliation?date=${today}`)
    ).json()) as Record<string, any>;
    expect(report.payment_counts).toEqual({ pending: 0, confirmed: 0, finalized: 7, failed: 0 });
    expect(report.exception_counts).toMatchObject({ not_finalized: 0, amount_mismatch: 1 });
  });
});

describe('creator reads', () => {
  test("creatorEarnings: the author's shares by day, equal to the ledger; only the creator or finance may read them", async () => {
    const query = `query ($handle: String!, $from: DateTime!, $to: DateTime!) {
      creatorEarnings(handle: $handle, from: $from, to: $to, granularity: DAY) { bucket amountUsdMicro } }`;
    const range = {
      handle: 'fin_author',
      from: new Date(Date.now() - 86_400_000).toISOString(),
      to: new Date(Date.now() + 86_400_000).toISOString(),
    };
    const own = await h.gql(author, query, range);
    expect(own.errors).toBeUndefined();
    // Two replies, a quote and a repost of the author's post: 4 x $0.50.
    expect(own.data.creatorEarnings).toEqual([
      { bucket: `${today}T00:00:00.000Z`, amountUsdMicro: '2000000' },
    ]);
    expect((await h.env.app.ledger.money(author.account.id)).totalEarnedMicro).toBe(2_000_000n);
    expect((await h.gql(finance, query, range)).data.creatorEarnings).toHaveLength(1);
    expect((await h.gql(fan, query, range)).errors?.[0]?.extensions.code).toBe('FORBIDDEN');
  });

  test("postStats counts the post's engagement from the analytics pipeline", async () => {
    const query = 'query ($id: ID!) { postStats(id: $id) { likes replies quotes reposts } }';
    const stats = await h.gql(author, query, { id: postId });
    expect(stats.errors).toBeUndefined();
    expect(stats.data.postStats).toEqual({ likes: 1, replies: 2, quotes: 1, reposts: 1 });
    expect((await h.gql(fan, query, { id: postId })).errors?.[0]?.extensions.code).toBe('FORBIDDEN');
  });
});
