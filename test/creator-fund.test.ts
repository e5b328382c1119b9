import { Writable } from 'node:stream';
import { PublicKey } from '@solana/web3.js';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  associatedTokenAccount,
  buildMintTo,
  buildTransfer,
  generateWallet,
  sendAndConfirm,
  signTransaction,
} from '../src/adapters/solana/index.js';
import {
  scheduleCreatorFundEpochs,
  unscheduleCreatorFundEpochs,
} from '../src/adapters/redis/creator-fund-queue.js';
import {
  epochEngagement,
  eventsShippedThrough,
  payingEngagers,
  unpaidEngagement,
} from '../src/app/creator-fund/engagement-source.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { commitRepost } from '../src/app/write-path/repost-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { drainOnChain } from './support/chain-tampering.js';
import { tokenAccountExists } from './support/balances.js';
import { depositUsdc } from './support/deposit.js';
import {
  CREATING_TRANSFERS_PER_BATCH,
  PAYOUT_MEMO_MAX_BYTES,
  signPayoutBatch,
  TRANSFERS_PER_BATCH,
} from '../src/app/creator-fund/payout-transaction.js';
import {
  CATCH_UP_EPOCHS,
  EpochNotReadyError,
  planEpoch,
  settleEpoch,
  type CreatorFundDeps,
} from '../src/app/creator-fund/run-epoch.js';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { endedEpochs, scoreAuthors, type EpochWindow } from '../src/domain/payouts/creator-fund-rules.js';
import { payoutTransactionBytes, TRANSACTION_SIZE_LIMIT } from '../src/domain/payouts/payout-batches.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';

/**
 * The creator fund end to end on real services: engagement created through the REST API, shipped
 * to ClickHouse by the worker's event shipper, scored there, paid in native tokens through the
 * outbox, visible in the history and GraphQL, reconciled against the chain.
 */
const BUDGET = 1_000_000_000_003n; // 1,000 tokens and 3 base units: the split has a remainder
let h: ServiceHarness;
let alice: Member, bob: Member, carol: Member, dave: Member, erin: Member, frank: Member;
const logLines: string[] = [];
let deps: CreatorFundDeps;

beforeAll(async () => {
  h = await openServiceHarness({ CREATOR_FUND_EPOCH_BUDGET: BUDGET.toString() });
  // The same app, with a logger this test reads (the harness's is silent).
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  deps = { ...h.env.app, logger: pino({ level: 'info' }, sink) };
  [alice, bob, carol, dave, erin, frank] = await Promise.all([
    h.member('cf_alice', 6_000_000n),
    h.member('cf_bob', 3_000_000n),
    h.member('cf_carol', 1_000_000n),
    h.member('cf_dave', 1_000_000n),
    h.member('cf_erin', 5_000_000n),
    h.member('cf_frank', 1_000_000n),
  ]);
  // Likes count only from accounts that paid for something: the likers pay for a post first.
  for (const liker of [carol, dave, frank]) await post(liker, { type: 'post', content: 'my dollar' });
  await paymentsSettled(h.env.app.db);
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function dbNow(): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`SELECT clock_timestamp() AS now`.execute(h.env.app.db);
  return rows[0]!.now;
}

async function post(who: Member, body: Record<string, unknown>): Promise<string> {
  const response = await h.call(who, 'POST', '/posts', body);
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

async function like(who: Member, postId: string, liked = true): Promise<void> {
  const response = await h.call(who, liked ? 'POST' : 'DELETE', `/posts/${postId}/like`);
  expect(response.status).toBe(200);
}

/** A window that has ended, once the shipper has put every event of it into ClickHouse. */
async function closedWindow(start: Date): Promise<EpochWindow> {
  const end = new Date((await dbNow()).getTime() + 1);
  const deadline = Date.now() + 20_000;
  while (!(await eventsShippedThrough(h.env.app.db, end))) {
    if (Date.now() > deadline) throw new Error('events were not shipped to ClickHouse in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { start, end };
}

/** 0 when the owner has no native token account (a wallet the fund never paid has none). */
async function nativeOnChain(owner: string | PublicKey): Promise<bigint> {
  const ata = associatedTokenAccount(h.platform.nativeMint, new PublicKey(owner));
  if (!(await tokenAccountExists(h.env.app, ata))) return 0n;
  const { value } = await h.env.app.rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
    ata.toBase58(),
  ]);
  return BigInt(value.amount);
}

const fundOnChain = () => nativeOnChain(h.platform.signers.creator_fund.publicKey);

/** The account's native ledger row (balance, pending, total_earned), zeros when it has none. */
async function nativeLedger(accountId: string) {
  const row = await h.env.app.db
    .selectFrom('ledger_accounts')
    .select(['balance', 'pending', 'total_earned'])
    .where('account_id', '=', accountId)
    .where(sql<boolean>`currency = 'native'`)
    .executeTakeFirst();
  return row ?? { balance: 0n, pending: 0n, total_earned: 0n };
}

/** Moves every native token of the fund away on chain (to the pool authority's account). */
async function drainFund(): Promise<void> {
  const { app } = h.env;
  const platform = h.platform;
  const balance = await fundOnChain();
  const { blockhash, lastValidBlockHeight } = await app.rpc.getLatestBlockhash('confirmed');
  const drain = buildTransfer({
    feePayer: platform.signers.fee_payer.publicKey,
    recentBlockhash: blockhash,
    legs: [
      {
        mint: platform.nativeMint,
        decimals: platform.nativeDecimals,
        from: platform.signers.creator_fund.publicKey,
        to: platform.signers.pool_authority.publicKey,
        amount: balance,
      },
    ],
  });
  const drained = signTransaction(drain, [platform.signers.fee_payer, platform.signers.creator_fund]);
  await sendAndConfirm(app.rpc, { ...drained, lastValidBlockHeight }, { commitment: 'confirmed' });
  expect(await fundOnChain()).toBe(0n);
}

/** Mints native tokens into the fund (the localnet's mint authority is ours). */
async function topUpFund(amount: bigint): Promise<void> {
  const { app } = h.env;
  const platform = h.platform;
  const { blockhash, lastValidBlockHeight } = await app.rpc.getLatestBlockhash('confirmed');
  const mint = buildMintTo({
    feePayer: platform.signers.fee_payer.publicKey,
    recentBlockhash: blockhash,
    mint: platform.nativeMint,
    decimals: platform.nativeDecimals,
    authority: platform.signers.native_mint_authority.publicKey,
    to: platform.signers.creator_fund.publicKey,
    amount,
  });
  const minted = signTransaction(mint, [platform.signers.fee_payer, platform.signers.native_mint_authority]);
  await sendAndConfirm(app.rpc, { ...minted, lastValidBlockHeight }, { commitment: 'confirmed' });
}

async function metric(name: string): Promise<string> {
  return (await h.env.app.metrics.registry.getSingleMetricAsString(name)) ?? '';
}

describe('creator fund', { timeout: 120_000 }, () => {
  let firstSignature = '';

  test('scores ClickHouse engagement (self ignored, per-engager cap, unlikes cancel likes) and pays the budget exactly', async () => {
    const p1 = await post(alice, { type: 'post', content: 'a post worth engaging with' });
    await like(frank, p1); // before the epoch: frank's like was counted (or not) back then
    const start = await dbNow();

    await like(bob, p1);
    const r1 = await post(bob, { type: 'reply', content: 'a reply', parent_id: p1 });
    await post(bob, { type: 'quote', content: 'a quote', quoted_post_id: p1 });
    await like(carol, p1);
    await like(carol, p1, false);
    await like(carol, p1); // like, unlike, like: stands at the end, never liked before: 1
    await like(dave, p1);
    await like(dave, p1, false); // like then unlike: cancelled
    await like(frank, p1, false);
    await like(frank, p1); // liked before this epoch: an unlike/like cycle does not pay again
    await like(alice, p1); // self-engagement: ignored
    await post(alice, { type: 'reply', content: 'replying to myself', parent_id: p1 });
    await like(alice, r1); // alice engages with bob's reply: bob earns
    for (let k = 0; k < 4; k++) await post(erin, { type: 'reply', content: `farm ${k}`, parent_id: p1 });

    const epoch = await closedWindow(start);
    const rows = await epochEngagement(h.env.app.clickhouse, epoch);
    const byPair = Object.fromEntries(rows.map((r) => [`${r.authorId}<-${r.engagerId}`, r]));
    const pair = (author: Member, engager: Member) => byPair[`${author.account.id}<-${engager.account.id}`];
    expect(pair(alice, bob)).toMatchObject({ likes: 1, replies: 1, quotes: 1, reposts: 0 });
    expect(pair(alice, carol)).toMatchObject({ likes: 1, replies: 0 });
    expect(pair(alice, erin)).toMatchObject({ likes: 0, replies: 4 });
    expect(pair(bob, alice)).toMatchObject({ likes: 1 });
    expect(pair(alice, dave)).toBeUndefined(); // like + unlike
    expect(pair(alice, frank)).toBeUndefined(); // re-like of a post liked before
    expect(pair(alice, alice)).toBeUndefined(); // self
    expect(rows).toHaveLength(4);

    // alice: bob 1+3+4 = 8, carol 1, erin 4 replies = 12 capped at 10 → 19; bob: 1.
    expect(scoreAuthors(rows)).toEqual(
      [
        { authorId: alice.account.id, score: 19n },
        { authorId: bob.account.id, score: 1n },
      ].sort((a, b) => (a.authorId < b.authorId ? -1 : 1)),
    );

    await paymentsSettled(h.env.app.db);
    const fundBefore = await fundOnChain();
    const usdcEarnedBefore = (await h.env.app.ledger.money(alice.account.id)).totalEarnedMicro;
    const plan = await planEpoch(deps, epoch);
    expect(plan).toMatchObject({
      outcome: 'planned',
      paidTotal: BUDGET,
      authorCount: 2,
      alreadyPlanned: false,
    });
    expect(plan.batches).toHaveLength(1);
    // 1,000,000,000,003 split 19:20 and 1:20 → 950,000,000,002 r 17 and 50,000,000,000 r 3:
    // the one unit left goes to the larger remainder (alice).
    const payouts = await h.env.app.db
      .selectFrom('creator_fund_payouts')
      .select(['account_id', 'amount', 'score'])
      .where('epoch_start', '=', epoch.start)
      .execute();
    const amountOf = (m: Member) => payouts.find((p) => p.account_id === m.account.id)?.amount;
    expect(amountOf(alice)).toBe(950_000_000_003n);
    expect(amountOf(bob)).toBe(50_000_000_000n);
    expect(payouts.reduce((acc, p) => acc + p.amount, 0n)).toBe(BUDGET);

    // Held until the chain confirms, like every credit.
    expect(await nativeLedger(alice.account.id)).toMatchObject({ balance: 0n, pending: 950_000_000_003n });
    expect(await settleEpoch(deps, plan)).toEqual(['confirmed']);
    expect(await nativeOnChain(alice.account.walletAddress)).toBe(950_000_000_003n);
    expect(await nativeOnChain(bob.account.walletAddress)).toBe(50_000_000_000n);
    expect(await fundOnChain()).toBe(fundBefore - BUDGET);
    expect(await nativeLedger(alice.account.id)).toEqual({
      balance: 950_000_000_003n,
      pending: 0n,
      total_earned: 950_000_000_003n,
    });
    // Native earnings never reach the USD total.
    expect((await h.env.app.ledger.money(alice.account.id)).totalEarnedMicro).toBe(usdcEarnedBefore);

    // Planned once: a second run finds the plan and writes nothing.
    const again = await planEpoch(deps, epoch);
    expect(again).toMatchObject({ alreadyPlanned: true, paidTotal: BUDGET });
    expect(await nativeOnChain(alice.account.walletAddress)).toBe(950_000_000_003n);

    firstSignature = again.batches[0]!.signature;
    expect(logLines.join('')).toContain('epoch planned');
  });

  test('a reply or repost whose payment failed on chain earns nothing; an unsettled one holds the epoch back', async () => {
    const target = await post(alice, { type: 'post', content: 'engage with me, if you can pay' });
    const gina = await h.member('cf_gina', 2_000_000n);
    const start = await dbNow();
    // Paid in the ledger, then the wallet is emptied on chain before the worker sends: both fail.
    const reply = await commitPost(h.env.app, gina.account.id, {
      type: 'reply',
      content: 'a reply that never gets paid',
      parentId: target,
    });
    const repost = await commitRepost(h.env.app, gina.account.id, target);
    const epoch = await closedWindow(start);
    expect((await unpaidEngagement(h.env.app.db, epoch)).unsettled).toBe(2);
    await expect(planEpoch(deps, epoch)).rejects.toThrow(EpochNotReadyError);

    await drainOnChain(h.env.app, h.platform, gina.account, 2_000_000n);
    expect(await settlePayment(h.env.app, reply.chainTransactionId)).toBe('failed');
    expect(await settlePayment(h.env.app, repost.chainTransactionId)).toBe('failed');
    const unpaid = await unpaidEngagement(h.env.app.db, epoch);
    expect(unpaid).toMatchObject({ unsettled: 0 });
    expect(unpaid.failedEventIds).toHaveLength(2);

    // ClickHouse holds both events; without the exclusion they would count, with it nothing does.
    const counted = await epochEngagement(h.env.app.clickhouse, epoch);
    expect(counted.find((r) => r.engagerId === gina.account.id)).toMatchObject({ replies: 1, reposts: 1 });
    const paid = await epochEngagement(h.env.app.clickhouse, epoch, unpaid.failedEventIds);
    expect(paid.find((r) => r.engagerId === gina.account.id)).toBeUndefined();
  });

  test('each author sees an earn entry with the batch signature; GraphQL shows earnings and epochs', async () => {
    const response = await h.call(alice, 'GET', '/me/transactions?limit=50');
    const { transactions } = (await response.json()) as { transactions: Array<Record<string, unknown>> };
    const payout = transactions.find((t) => t.swap_tx === firstSignature);
    expect(payout).toEqual({
      id: expect.any(String),
      type: 'earn',
      amount_usd: 0,
      description: expect.stringContaining('950.000000003'),
      swap_tx: firstSignature,
      related_post_id: null,
      counterparty: null,
      created_at: expect.any(String),
      // The batch's transaction (settled confirmed above), followed by the outbox like every payment.
      status: expect.toBeOneOf(['confirmed', 'finalized']),
      slot: expect.any(Number),
      confirmed_at: expect.any(String),
      finalized_at: expect.toBeOneOf([expect.any(String), null]),
    });

    const { data, errors } = await h.gql(
      alice,
      `{ viewer { earnings { directSharesSettledUsdMicro directSharesPendingUsdMicro fundPayoutsSettledNative fundPayoutsPendingNative } }
         creatorFundEpochs(limit: 5) { start end budgetNative paidNative authorCount status note batchSignatures } }`,
    );
    expect(errors).toBeUndefined();
    // alice earned 50% of bob's reply and quote and of erin's four replies: $3.
    expect(data.viewer.earnings).toEqual({
      directSharesSettledUsdMicro: '3000000',
      directSharesPendingUsdMicro: '0',
      fundPayoutsSettledNative: '950.000000003',
      fundPayoutsPendingNative: '0',
    });
    expect(data.creatorFundEpochs[0]).toMatchObject({
      budgetNative: '1000.000000003',
      paidNative: '1000.000000003',
      authorCount: 2,
      status: 'PAID',
      note: '',
      batchSignatures: [firstSignature],
    });
  });

  test('every payout batch reconciles matched, and ledger native balances equal the chain', async () => {
    const deadline = Date.now() + 30_000;
    let status: string | null = null;
    while (status !== 'matched' && Date.now() < deadline) {
      await reconcileRound(h.env.app, { missingAfterMs: 120_000, finalizedRecheckMs: 0, limit: 1_000 });
      const row = await h.env.app.db
        .selectFrom('chain_transactions')
        .select('reconciled_status')
        .where('signature', '=', firstSignature)
        .executeTakeFirstOrThrow();
      status = row.reconciled_status;
    }
    expect(status).toBe('matched');
    for (const m of [alice, bob, carol, dave, erin, frank]) {
      const ledger = await nativeLedger(m.account.id);
      expect(ledger.balance + ledger.pending, m.account.handle).toBe(
        await nativeOnChain(m.account.walletAddress),
      );
    }
  });

  test('an empty fund pays nothing and says so, and pays once topped up', async () => {
    await drainFund();

    const r2 = await post(bob, { type: 'post', content: 'bob again' });
    const start = await dbNow();
    await like(carol, r2);
    const epoch = await closedWindow(start);

    const empty = await planEpoch(deps, epoch);
    expect(empty).toMatchObject({ outcome: 'unfunded', paidTotal: 0n, authorCount: 0, batches: [] });
    expect(empty.note).toMatch(/empty/);
    expect(logLines.join('')).toMatch(/creator fund: the creator fund is empty/);
    expect(await metric('ledgerfeed_creator_fund_underfunded_epochs_total')).toMatch(/kind="empty"} 1/);

    // Topped up with 5 tokens (less than the budget): the same epoch pays what the fund holds.
    const bobBefore = await nativeOnChain(bob.account.walletAddress);
    await topUpFund(5_000_000_000n);
    const paid = await planEpoch(deps, epoch);
    expect(paid).toMatchObject({ outcome: 'planned', paidTotal: 5_000_000_000n, authorCount: 1 });
    expect(paid.note).toMatch(/short/);
    expect(await metric('ledgerfeed_creator_fund_underfunded_epochs_total')).toMatch(/kind="short"} 1/);
    expect(await settleEpoch(deps, paid)).toEqual(['confirmed']);
    expect(await nativeOnChain(bob.account.walletAddress)).toBe(bobBefore + 5_000_000_000n);
    expect(await fundOnChain()).toBe(0n);
  });

  test('likes from accounts that never paid earn the author nothing; once the liker paid for a post they count', async () => {
    const [sybil, other] = await Promise.all([h.member('cf_sybil_a', 0n), h.member('cf_sybil_b', 0n)]);
    const farmed = await post(alice, { type: 'post', content: 'farm me' });
    let start = await dbNow();
    await like(sybil, farmed);
    await like(other, farmed);
    let epoch = await closedWindow(start);
    // ClickHouse has the likes; the plan counts none of them.
    const rows = await epochEngagement(h.env.app.clickhouse, epoch);
    expect(rows.filter((r) => r.authorId === alice.account.id).map((r) => r.likes)).toEqual([1, 1]);
    await topUpFund(10_000_000_000n);
    const none = await planEpoch(deps, epoch);
    expect(none).toMatchObject({ outcome: 'no_engagement', paidTotal: 0n, authorCount: 0, batches: [] });

    // The sybil pays for a post: while that payment is in flight an epoch waits for it, and once it
    // settled the sybil's likes count. The other one's still do not.
    await depositUsdc(h.env.app, h.platform, sybil.account, 1_000_000n);
    const paid = await commitPost(h.env.app, sybil.account.id, { type: 'post', content: 'now I paid' });
    const farther = new Date((await dbNow()).getTime() + 60_000);
    expect(await payingEngagers(h.env.app.db, [sybil.account.id, other.account.id], farther)).toEqual({
      paying: new Set(),
      unsettled: 1,
    });
    expect(await settlePayment(h.env.app, paid.chainTransactionId)).toBe('confirmed');
    expect(await payingEngagers(h.env.app.db, [sybil.account.id, other.account.id], farther)).toEqual({
      paying: new Set([sybil.account.id]),
      unsettled: 0,
    });

    const second = await post(alice, { type: 'post', content: 'farm me again' });
    start = await dbNow();
    await like(sybil, second);
    await like(other, second);
    epoch = await closedWindow(start);
    await paymentsSettled(h.env.app.db);
    const plan = await planEpoch(deps, epoch);
    expect(plan).toMatchObject({ outcome: 'planned', authorCount: 1, paidTotal: 10_000_000_000n });
    const payouts = await h.env.app.db
      .selectFrom('creator_fund_payouts')
      .select(['account_id', 'score'])
      .where('epoch_start', '=', epoch.start)
      .execute();
    expect(payouts).toEqual([{ account_id: alice.account.id, score: 1n }]); // the paying liker's like only
    expect(await settleEpoch(deps, plan)).toEqual(['confirmed']);
  });

  test('a batch whose blockhash expired is re-signed by the fund and paid once; one failing on chain is reversed', async () => {
    const { app } = h.env;
    const outbox = (id: string) =>
      app.db
        .selectFrom('chain_transactions')
        .select(['status', 'attempts', 'signature', 'replaced_signatures'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();

    // Re-sign: the batch's blockhash expires before it is sent.
    await topUpFund(100_000_000_000n);
    const p3 = await post(alice, { type: 'post', content: 'late payout' });
    let start = await dbNow();
    await like(dave, p3);
    const late = await planEpoch(deps, await closedWindow(start));
    expect(late).toMatchObject({ outcome: 'planned', paidTotal: 100_000_000_000n, authorCount: 1 });
    const aliceBefore = await nativeOnChain(alice.account.walletAddress);
    h.env.localnet!.chain.warp(151);
    expect(await settleEpoch(deps, late)).toEqual(['confirmed']);
    const resigned = await outbox(late.batches[0]!.chainTransactionId);
    expect(resigned.attempts).toBe(2);
    expect(resigned.replaced_signatures).toEqual([late.batches[0]!.signature]);
    expect(await nativeOnChain(alice.account.walletAddress)).toBe(aliceBefore + 100_000_000_000n);
    expect(await settleEpoch(deps, late)).toEqual(['confirmed']); // again: nothing moves
    expect(await nativeOnChain(alice.account.walletAddress)).toBe(aliceBefore + 100_000_000_000n);

    // Reversal: the fund's tokens leave behind the ledger's back, the batch fails on chain.
    await topUpFund(50_000_000_000n);
    const p4 = await post(alice, { type: 'post', content: 'doomed payout' });
    start = await dbNow();
    await like(frank, p4);
    const doomed = await planEpoch(deps, await closedWindow(start));
    expect(doomed).toMatchObject({ outcome: 'planned', paidTotal: 50_000_000_000n });
    const ledgerBefore = await nativeLedger(alice.account.id);
    expect(ledgerBefore.pending).toBe(50_000_000_000n);
    await drainFund();
    expect(await settleEpoch(deps, doomed)).toEqual(['failed']);
    expect(await nativeLedger(alice.account.id)).toEqual({
      balance: ledgerBefore.balance,
      pending: 0n,
      total_earned: ledgerBefore.total_earned - 50_000_000_000n,
    });
    expect(await nativeOnChain(alice.account.walletAddress)).toBe(aliceBefore + 100_000_000_000n);

    const { data } = await h.gql(alice, '{ creatorFundEpochs(limit: 2) { status paidNative } }');
    expect(data.creatorFundEpochs).toEqual([
      { status: 'PARTLY_FAILED', paidNative: '0' },
      { status: 'PAID', paidNative: '100' },
    ]);
    const history = (await (await h.call(alice, 'GET', '/me/transactions?limit=5')).json()) as {
      transactions: Array<{ type: string; amount_usd: number; description: string }>;
    };
    expect(history.transactions[0]).toMatchObject({
      type: 'refund',
      amount_usd: 0,
      description: expect.stringContaining('Creator fund payout reversed'),
    });
  });

  test('a payout batch of the computed size fits 1232 bytes exactly as computed; one more transfer does not', async () => {
    const recipients = (n: number) =>
      Array.from({ length: n }, () => ({
        owner: new PublicKey(generateWallet().address),
        amount: 18_446_744_073_709_551_615n, // u64 max: amounts do not change the size, but be sure
      }));
    const memo = 'm'.repeat(PAYOUT_MEMO_MAX_BYTES);
    const full = await signPayoutBatch(h.env.app.rpc, h.platform, recipients(TRANSFERS_PER_BATCH), memo);
    expect(full.wire.length).toBe(payoutTransactionBytes(TRANSFERS_PER_BATCH, PAYOUT_MEMO_MAX_BYTES));
    expect(full.wire.length).toBeLessThanOrEqual(TRANSACTION_SIZE_LIMIT);
    await expect(
      signPayoutBatch(h.env.app.rpc, h.platform, recipients(TRANSFERS_PER_BATCH + 1), memo),
    ).rejects.toThrow(/at most 1232 fit/);

    // Recipients never paid before: each transfer also creates the recipient's token account.
    const opening = (n: number) => recipients(n).map((r) => ({ ...r, createAccount: true }));
    expect(CREATING_TRANSFERS_PER_BATCH).toBe(8);
    const creating = await signPayoutBatch(
      h.env.app.rpc,
      h.platform,
      opening(CREATING_TRANSFERS_PER_BATCH),
      memo,
    );
    expect(creating.wire.length).toBe(
      payoutTransactionBytes(
        CREATING_TRANSFERS_PER_BATCH,
        PAYOUT_MEMO_MAX_BYTES,
        CREATING_TRANSFERS_PER_BATCH,
      ),
    );
    expect(creating.wire.length).toBeLessThanOrEqual(TRANSACTION_SIZE_LIMIT);
    await expect(
      signPayoutBatch(h.env.app.rpc, h.platform, opening(CREATING_TRANSFERS_PER_BATCH + 1), memo),
    ).rejects.toThrow(/at most 1232 fit/);
  });

  test('the repeatable job plans every ended epoch of its window by itself, once', async () => {
    const { app } = h.env;
    const due = endedEpochs(new Date(), app.config.CREATOR_FUND_EPOCH_MS, CATCH_UP_EPOCHS);
    // A tick every second on the harness's worker role (the schedule is off in tests by default).
    await scheduleCreatorFundEpochs(app.stack.redis.url, app.config.REDIS_PREFIX, 1_000);
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const rows = await app.db
          .selectFrom('creator_fund_epochs')
          .select('epoch_start')
          .where(
            'epoch_start',
            'in',
            due.map((e) => e.start),
          )
          .execute();
        if (rows.length === due.length) break;
        if (Date.now() > deadline) throw new Error(`the job planned ${rows.length} of ${due.length} epochs`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(await metric('ledgerfeed_creator_fund_epochs_total')).toMatch(/outcome="no_engagement"}/);
    } finally {
      await unscheduleCreatorFundEpochs(app.stack.redis.url, app.config.REDIS_PREFIX);
    }
  });
});
