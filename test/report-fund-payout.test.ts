import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventsShippedThrough } from '../src/app/creator-fund/engagement-source.js';
import { planEpoch, settleEpoch, type CreatorFundDeps } from '../src/app/creator-fund/run-epoch.js';
import { reconcileRound } from '../src/app/indexer/reconciler.js';
import { followWallets } from '../src/app/indexer/wallet-follower.js';
import { parseUnits, type LedgerCurrency } from '../src/domain/reports/report-format.js';
import {
  COINTRACKER_HEADER,
  HISTORY_TYPES,
  KOINLY_HEADER,
  REPORT_COLUMNS,
} from '../src/domain/reports/report-kinds.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';
import { until } from './support/until.js';
import { jsonLines, parseCsv } from './support/report-files.js';
import {
  currencyOf,
  ledgerBalancesAt,
  onChainAt,
  shipAll,
  writeReportToBuffer,
} from './support/report-writing.js';

/**
 * A creator-fund payout (native tokens, paid by an epoch through the outbox and confirmed on chain)
 * in the report writers, against the real services: it is the creator's `earn` in the native
 * currency in balance.summary (and the fund's negative `earn`), a `fund_payout` leg of each side in
 * ledger.itemized, and in the creator's account.statement an `earn` line whose koinly label is
 * `reward`; every sum stays exact to the base unit, and the native closing is what the chain holds.
 * (test/report-writers.test.ts covers the rest of the activity; this file adds the payout.)
 */
const PAYOUT = 12_345_678_901n; // 12.345678901 native tokens: all nine places matter
const PAYOUT_TEXT = '12.345678901';

let h: ServiceHarness;
let creator: Member;
let fan: Member;
let startedAt: Date;
let endedAt: Date;
let signature: string;

const run = (spec: Parameters<typeof writeReportToBuffer>[2]) =>
  writeReportToBuffer(h, { start: startedAt, end: endedAt }, spec);
const onChain = (owner: string, currency: LedgerCurrency) => onChainAt(h, owner, currency);

async function dbNow(): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`SELECT clock_timestamp() AS now`.execute(h.env.app.db);
  return rows[0]!.now;
}

beforeAll(async () => {
  h = await openServiceHarness({
    RATE_LIMIT_MULTIPLIER: '0',
    // The epoch is paid by this test (planEpoch/settleEpoch), not by the scheduled job.
    CREATOR_FUND_ENABLED: 'false',
    CREATOR_FUND_EPOCH_BUDGET: PAYOUT.toString(),
  });
  const deps: CreatorFundDeps = { ...h.env.app, logger: pino({ level: 'silent' }) };
  // Before the members: their deposits are in the interval, so every opening is 0.
  startedAt = new Date(Date.now() - 1000);
  creator = await h.member('fp_creator', 3_000_000n);
  fan = await h.member('fp_fan', 5_000_000n);
  const created = await h.call(creator, 'POST', '/posts', { type: 'post', content: 'fund me' });
  expect(created.status).toBe(201);
  const postId = ((await created.json()) as { id: string }).id;
  // Likes count only from accounts that paid for something: the fan pays for a post first.
  expect((await h.call(fan, 'POST', '/posts', { type: 'post', content: 'my dollar' })).status).toBe(201);
  await paymentsSettled(h.env.app.db);
  const epochStart = await dbNow();
  expect(
    (await h.call(fan, 'POST', '/posts', { type: 'reply', content: 'a reply', parent_id: postId })).status,
  ).toBe(201);
  expect((await h.call(fan, 'POST', `/posts/${postId}/like`)).status).toBe(200);
  expect((await h.call(fan, 'POST', `/posts/${postId}/repost`)).status).toBe(201);
  expect(
    (await h.call(fan, 'POST', '/send', { to_handle: 'fp_creator', amount_usd: 0.25, memo: 'tip' })).status,
  ).toBe(201);
  await paymentsSettled(h.env.app.db);

  // The epoch: ended, its events in ClickHouse, then planned and paid on chain.
  const epochEnd = new Date((await dbNow()).getTime() + 1);
  await until(
    "the epoch's events shipped to ClickHouse",
    () => eventsShippedThrough(h.env.app.db, epochEnd),
    Boolean,
    30_000,
  );
  const plan = await planEpoch(deps, { start: epochStart, end: epochEnd });
  expect(plan).toMatchObject({ outcome: 'planned', paidTotal: PAYOUT, authorCount: 1 });
  expect(await settleEpoch(deps, plan)).toEqual(['confirmed']);
  signature = plan.batches[0]!.signature;
  expect(await onChain(creator.account.walletAddress, 'native')).toBe(PAYOUT);

  await paymentsSettled(h.env.app.db);
  await reconcileRound(h.env.app, { missingAfterMs: 600_000, limit: 1_000 });
  await followWallets(h.env.app);
  await shipAll(h.env.app);
  endedAt = new Date(Date.now() + 1000);
}, 180_000);
afterAll(async () => {
  await h?.close();
});

describe('a creator-fund payout in the reports', { timeout: 60_000 }, () => {
  test('balance.summary: the payout is the native earn of the creator and minus the fund; every row adds up; closings are Postgres and the chain', async () => {
    const handles = await h.env.app.db.selectFrom('accounts').select(['id', 'handle']).execute();
    const handleOf = new Map(handles.map((row) => [row.id, row.handle]));
    const keyed = async (at: Date) => {
      const map = new Map<string, bigint>();
      for (const row of await ledgerBalancesAt(h.env.app.db, at)) {
        const account = row.kind === 'user' ? handleOf.get(row.account_id ?? '') : row.kind;
        map.set(`${account}/${row.currency}`, row.balance);
      }
      return map;
    };
    const closingPg = await keyed(endedAt);
    const openingPg = await keyed(startedAt);
    const { bytes, rowCount, summary } = await run({ type: 'balance.summary', format: 'jsonl' });
    const rows = jsonLines(bytes);
    expect(rows).toHaveLength(rowCount);
    for (const row of rows) {
      const currency = currencyOf(row.currency);
      const units = (name: string) => parseUnits(row[name] ?? '', currency);
      const key = `${row.account}/${currency}`;
      const moved = HISTORY_TYPES.reduce((sum, type) => sum + units(type), 0n);
      expect(units('opening') + moved, key).toBe(units('closing'));
      expect(units('closing'), key).toBe(closingPg.get(key) ?? 0n);
      expect(units('opening'), key).toBe(openingPg.get(key) ?? 0n);
    }
    const rowOf = (account: string, currency: LedgerCurrency) =>
      rows.find((r) => r.account === account && currencyOf(r.currency) === currency);

    const creatorNative = rowOf('fp_creator', 'native');
    expect(creatorNative).toMatchObject({
      currency: 'LFEED',
      opening: '0.000000000',
      earn: PAYOUT_TEXT,
      closing: PAYOUT_TEXT,
      chain_closing: PAYOUT_TEXT,
      difference: '0.000000000',
    });
    for (const type of HISTORY_TYPES)
      if (type !== 'earn') expect(creatorNative![type], type).toBe('0.000000000');

    // The fund: the payout left it (earn, negative), and its chain_closing is its wallet's tokens.
    const fund = rowOf('creator_fund', 'native')!;
    expect(fund).toBeDefined();
    expect(fund.earn).toBe(`-${PAYOUT_TEXT}`);
    const fundOnChain = await onChain(h.platform.signers.creator_fund.publicKey.toBase58(), 'native');
    expect(parseUnits(fund.chain_closing!, 'native')).toBe(fundOnChain);
    expect(parseUnits(fund.closing!, 'native') - fundOnChain).toBe(parseUnits(fund.difference!, 'native'));

    // Users' USDC and native closings are their wallets' tokens on chain.
    for (const who of [creator, fan]) {
      for (const currency of ['usdc', 'native'] as const) {
        const row = rowOf(who.account.handle, currency);
        const chain = await onChain(who.account.walletAddress, currency);
        if (!row) {
          expect(chain, `${who.account.handle}/${currency}`).toBe(0n);
          continue;
        }
        expect(parseUnits(row.closing!, currency), `${who.account.handle}/${currency}`).toBe(chain);
        expect(parseUnits(row.chain_closing!, currency), `${who.account.handle}/${currency}`).toBe(chain);
      }
    }
    expect(summary?.find((line) => line.currency === 'LFEED')).toBeDefined();
  });

  test('ledger.itemized: a fund_payout leg of each side with the batch signature; sums per account are closing - opening', async () => {
    const legs = await run({ type: 'ledger.itemized' });
    const records = parseCsv(legs.bytes.toString('utf8'));
    expect(records[0]).toEqual(REPORT_COLUMNS['ledger.itemized']);
    expect(records).toHaveLength(legs.rowCount + 1);
    const col = (name: string) => REPORT_COLUMNS['ledger.itemized'].indexOf(name);
    const sums = new Map<string, bigint>();
    for (const record of records.slice(1)) {
      const currency = currencyOf(record[col('currency')]);
      const key = `${record[col('account')]}/${currency}`;
      sums.set(key, (sums.get(key) ?? 0n) + parseUnits(record[col('amount')]!, currency));
    }
    const payoutLegs = records.filter((r) => r[col('kind')] === 'fund_payout');
    expect(
      payoutLegs.map((r) => [r[col('account')], r[col('type')], r[col('currency')], r[col('amount')]]),
    ).toEqual(
      expect.arrayContaining([
        ['fp_creator', 'earn', 'LFEED', PAYOUT_TEXT],
        ['creator_fund', 'earn', 'LFEED', `-${PAYOUT_TEXT}`],
      ]),
    );
    expect(payoutLegs).toHaveLength(2);
    for (const leg of payoutLegs) expect(leg[col('swap_tx')]).toBe(signature);

    const summary = jsonLines((await run({ type: 'balance.summary', format: 'jsonl' })).bytes);
    expect(summary.length).toBeGreaterThan(0);
    for (const row of summary) {
      const currency = currencyOf(row.currency);
      const key = `${row.account}/${currency}`;
      expect(sums.get(key) ?? 0n, key).toBe(
        parseUnits(row.closing!, currency) - parseUnits(row.opening!, currency),
      );
    }
    // Every account of the ledger file is in the summary (no leg lost between the two).
    for (const key of sums.keys()) {
      expect(
        summary.some((row) => `${row.account}/${currencyOf(row.currency)}` === key),
        key,
      ).toBe(true);
    }
    expect(sums.get('fp_creator/native')).toBe(PAYOUT);
  });

  test("the creator's account.statement: an LFEED earn line, koinly `reward`, cointracker received; balances run exactly", async () => {
    const csv = await run({ type: 'account.statement', accountId: creator.account.id });
    const records = parseCsv(csv.bytes.toString('utf8'));
    expect(records[0]).toEqual(REPORT_COLUMNS['account.statement']);
    const col = (name: string) => REPORT_COLUMNS['account.statement'].indexOf(name);
    const running = new Map<string, bigint>();
    for (const record of records.slice(1)) {
      const currency = currencyOf(record[col('currency')]);
      const after = (running.get(currency) ?? 0n) + parseUnits(record[col('amount')]!, currency);
      running.set(currency, after);
      expect(parseUnits(record[col('balance_after')]!, currency)).toBe(after);
    }
    const native = records.slice(1).filter((r) => r[col('currency')] === 'LFEED');
    expect(native).toHaveLength(1);
    expect(native[0]![col('type')]).toBe('earn');
    expect(native[0]![col('amount')]).toBe(PAYOUT_TEXT);
    expect(native[0]![col('balance_after')]).toBe(PAYOUT_TEXT);
    expect(native[0]![col('swap_tx')]).toBe(signature);
    expect(csv.summary).toEqual(
      expect.arrayContaining([{ currency: 'LFEED', opening: '0.000000000', closing: PAYOUT_TEXT }]),
    );
    // The statement's USDC closing is the creator's USDC on chain; its payments resolve.
    expect(running.get('usdc')).toBe(await onChain(creator.account.walletAddress, 'usdc'));
    const usdcTxs = new Set(
      records
        .slice(1)
        .filter((r) => r[col('currency')] === 'USDC')
        .map((r) => r[col('swap_tx')])
        .filter((tx): tx is string => !!tx),
    );
    expect(usdcTxs.size).toBeGreaterThan(1);
    for (const tx of usdcTxs) expect((await h.call(creator, 'GET', `/payments/${tx}`)).status, tx).toBe(200);

    const koinly = await run({ type: 'account.statement', accountId: creator.account.id, format: 'koinly' });
    const koinlyText = koinly.bytes.toString('utf8');
    expect(koinlyText.split('\r\n')[0]).toBe(KOINLY_HEADER.join(','));
    const reward = parseCsv(koinlyText)
      .slice(1)
      .filter((r) => r[9] === 'reward');
    expect(reward).toEqual([
      [
        expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
        '',
        '',
        PAYOUT_TEXT,
        'LFEED',
        '',
        '',
        '',
        '',
        'reward',
        expect.any(String),
        signature,
      ],
    ]);

    const cointracker = await run({
      type: 'account.statement',
      accountId: creator.account.id,
      format: 'cointracker',
    });
    const ct = parseCsv(cointracker.bytes.toString('utf8'));
    expect(ct[0]).toEqual([...COINTRACKER_HEADER]);
    expect(ct.slice(1).filter((r) => r[2] === 'LFEED')).toEqual([
      [
        expect.stringMatching(/^\d{2}\/\d{2}\/\d{4} \d{2}:\d{2}:\d{2}$/),
        PAYOUT_TEXT,
        'LFEED',
        '',
        '',
        '',
        '',
        '',
      ],
    ]);
  });
});
