import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventsShippedThrough } from '../src/app/creator-fund/engagement-source.js';
import { planEpoch, settleEpoch, type CreatorFundDeps } from '../src/app/creator-fund/run-epoch.js';
import { formatNative } from '../src/domain/payouts/creator-fund-rules.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';
import { until } from './support/until.js';

/**
 * The creator fund per creator (issue 51, item 4), against the real services: an epoch paid on
 * chain to two authors; each sees their own share of it (tokens, score, the epoch's total score,
 * the batch's swap_tx and state) beside the fund's total, and the swap_tx resolves through
 * GET /api/v1/payments/{swap_tx} with the same state.
 */
const BUDGET = 7_000_000_003n; // 7 tokens and 3 base units: the split has a remainder

let h: ServiceHarness;
let big: Member, small: Member, fan: Member;
let signature: string;
let epochStart: Date;

async function dbNow(): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`SELECT clock_timestamp() AS now`.execute(h.env.app.db);
  return rows[0]!.now;
}

async function call(who: Member, method: string, path: string, body?: unknown): Promise<Response> {
  const response = await h.call(who, method, path, body);
  expect(response.status, await response.clone().text()).toBeLessThan(300);
  return response;
}

const EPOCHS = `{ creatorFundEpochs(limit: 5) {
  start paidNative authorCount status
  myShare { tokensNative score epochScore swapTx status } } }`;

beforeAll(async () => {
  h = await openServiceHarness({
    RATE_LIMIT_MULTIPLIER: '0',
    // The epoch is paid by this test (planEpoch/settleEpoch), not by the scheduled job.
    CREATOR_FUND_ENABLED: 'false',
    CREATOR_FUND_EPOCH_BUDGET: BUDGET.toString(),
  });
  const deps: CreatorFundDeps = { ...h.env.app, logger: pino({ level: 'silent' }) };
  [big, small, fan] = await Promise.all([
    h.member('fs_big', 2_000_000n),
    h.member('fs_small', 2_000_000n),
    h.member('fs_fan', 6_000_000n),
  ]);
  const idOf = async (response: Response) => ((await response.json()) as { id: string }).id;
  const bigPost = await idOf(await call(big, 'POST', '/posts', { type: 'post', content: 'big' }));
  const smallPost = await idOf(await call(small, 'POST', '/posts', { type: 'post', content: 'small' }));
  // Likes count only from accounts that paid for something: the fan pays for a post first.
  await call(fan, 'POST', '/posts', { type: 'post', content: 'my dollar' });
  await paymentsSettled(h.env.app.db);

  epochStart = await dbNow();
  // big: a reply (3), a repost (2) and a like (1) = 6 points; small: a like = 1 point.
  await call(fan, 'POST', '/posts', { type: 'reply', content: 'a reply', parent_id: bigPost });
  await call(fan, 'POST', `/posts/${bigPost}/repost`);
  await call(fan, 'POST', `/posts/${bigPost}/like`);
  await call(fan, 'POST', `/posts/${smallPost}/like`);
  await paymentsSettled(h.env.app.db);

  const epochEnd = new Date((await dbNow()).getTime() + 1);
  await until(
    "the epoch's events shipped to ClickHouse",
    () => eventsShippedThrough(h.env.app.db, epochEnd),
    Boolean,
    30_000,
  );
  const plan = await planEpoch(deps, { start: epochStart, end: epochEnd });
  expect(plan).toMatchObject({ outcome: 'planned', paidTotal: BUDGET, authorCount: 2 });
  expect(await settleEpoch(deps, plan)).toEqual(['confirmed']);
  signature = plan.batches[0]!.signature;
  await paymentsSettled(h.env.app.db);
}, 180_000);
afterAll(async () => {
  await h?.close();
});

describe('creatorFundEpochs.myShare', { timeout: 60_000 }, () => {
  test("each author sees their own tokens and score beside the fund's total; the shares add up to it", async () => {
    const payouts = await h.env.app.db
      .selectFrom('creator_fund_payouts')
      .select(['account_id', 'amount', 'score'])
      .where('epoch_start', '=', epochStart)
      .execute();
    const payoutOf = (who: Member) => payouts.find((row) => row.account_id === who.account.id)!;
    expect(BigInt(payoutOf(big).score)).toBe(6n);
    expect(BigInt(payoutOf(small).score)).toBe(1n);

    let sum = 0n;
    for (const who of [big, small]) {
      const { data, errors } = await h.gql(who, EPOCHS);
      expect(errors).toBeUndefined();
      const [epoch] = data.creatorFundEpochs;
      expect(new Date(epoch.start).getTime()).toBe(epochStart.getTime());
      expect(epoch).toMatchObject({ paidNative: formatNative(BUDGET), authorCount: 2, status: 'PAID' });
      const payout = payoutOf(who);
      expect(epoch.myShare).toEqual({
        tokensNative: formatNative(BigInt(payout.amount)),
        score: Number(payout.score),
        epochScore: 7,
        swapTx: signature,
        status: expect.stringMatching(/^(CONFIRMED|FINALIZED)$/),
      });
      sum += BigInt(payout.amount);
    }
    // The split: 7 tokens 3 units in proportion 6 : 1, exactly the budget between the two.
    expect(sum).toBe(BUDGET);
    expect(BigInt(payoutOf(big).amount)).toBe((BUDGET * 6n) / 7n + 1n);
  });

  test('an account the epoch paid nothing sees the epoch with myShare null', async () => {
    const { data, errors } = await h.gql(fan, EPOCHS);
    expect(errors).toBeUndefined();
    expect(data.creatorFundEpochs[0]).toMatchObject({ authorCount: 2, myShare: null });
  });

  test("the share's swap_tx resolves through GET /payments/{swap_tx} with the same state", async () => {
    const { data } = await h.gql(big, EPOCHS);
    const share = data.creatorFundEpochs[0].myShare;
    const response = await h.call(big, 'GET', `/payments/${share.swapTx}`);
    expect(response.status).toBe(200);
    const payment = (await response.json()) as Record<string, unknown>;
    expect(payment).toMatchObject({ type: 'earn', swap_tx: signature });
    // Read after the share: the state can only have moved on (confirmed, then finalized).
    expect(['confirmed', 'finalized']).toContain(payment.status);
    if (share.status === 'FINALIZED') expect(payment.status).toBe('finalized');
    // The fan was not paid by the batch: it is not the fan's payment.
    expect((await h.call(fan, 'GET', `/payments/${share.swapTx}`)).status).toBe(404);
  });
});
