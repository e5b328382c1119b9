import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  associatedTokenAccount,
  buildTransfer,
  fundUsdc,
  sendAndConfirm,
  signerFromSeed,
  signTransaction,
  USDC_DECIMALS,
  type PlatformChain,
} from '../src/adapters/solana/index.js';
import { reconciliationSummary } from '../src/app/analytics/analytics-reads.js';
import { checkBalances, type BalanceCheckOptions } from '../src/app/indexer/balance-check.js';
import { createBlockFollower, type BlockFollower } from '../src/app/indexer/block-follower.js';
import { FollowedAccounts } from '../src/app/indexer/followed-accounts.js';
import { commitSend } from '../src/app/write-path/send-usdc.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import type { Account } from '../src/domain/accounts/account.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { PublicKey } from '@solana/web3.js';
import { depositNative, fundedAccount } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { until } from './support/until.js';

/**
 * The daily balance check (issue 52's safety net) against the real localnet, Postgres and
 * ClickHouse: every followed token account's ledger balance + pending against its on-chain amount,
 * a second look after a pause, and a balance_mismatch for what differs twice the same way.
 */
let env: TestEnv;
let platform: PlatformChain;
let finance: Account;
const users: Account[] = [];
const today = new Date().toISOString().slice(0, 10);

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
  finance = await createAccount(env.app, { handle: 'bc_finance', role: 'finance' });
  for (let i = 0; i < 4; i++)
    users.push(await fundedAccount(env.app, platform, `bc_user_${i}`, BigInt(i + 1) * 1_000_000n));
  await depositNative(env.app, platform, users[0]!, 5_000_000_000n);
  // What the block follower does each round: derive every wallet's two token accounts.
  const followed = new FollowedAccounts(env.app.db, platform);
  while ((await followed.refresh()).more);
}, 120_000);
afterAll(async () => {
  await env?.close();
});

const silent = pino({ level: 'silent' });

const check = (options: BalanceCheckOptions = {}) =>
  checkBalances({ ...env.app, logger: silent }, { recheckAfterMs: 0, ...options });

/** Follower rounds until it has passed every confirmed block; the deposits it credited. */
async function followerCatchUp(follower: BlockFollower): Promise<number> {
  let deposits = 0;
  for (let i = 0; i < 200; i++) {
    const round = await follower.step();
    deposits += round.deposits;
    if (!round.more && !round.stoppedBy) return deposits;
  }
  throw new Error('the block follower did not catch up in 200 rounds');
}

const usdcAccount = (account: Account) =>
  associatedTokenAccount(platform.usdcMint, new PublicKey(account.walletAddress)).toBase58();

async function dayRow(day: string) {
  const { rows } = await sql<{ accounts: number; mismatches: number; finished_at: Date | null }>`
    SELECT accounts, mismatches, finished_at FROM balance_checks WHERE day = ${day}::date`.execute(
    env.app.db,
  );
  return rows[0];
}

async function mismatchRows(day: string) {
  const result = await env.app.clickhouse.client.query({
    query: `SELECT toString(movement_id) AS movement_id, signature, ledger_amount, chain_amount, commitment, detail
              FROM ${env.app.clickhouse.table('reconciliation')} FINAL
             WHERE status = 'balance_mismatch' AND ledger_day = {day:Date}
             ORDER BY signature`,
    query_params: { day },
    format: 'JSONEachRow',
  });
  return result.json<Record<string, string>>();
}

async function stagedMismatches() {
  const rows = await env.app.db
    .selectFrom('event_staging')
    .select(['account_id', 'data', 'dedupe_key'])
    .where('type', '=', 'reconciliation.exception')
    .execute();
  return rows
    .map((row) => ({ ...row, data: row.data as Record<string, unknown> }))
    .filter((row) => row.data.verdict === 'balance_mismatch');
}

describe('daily balance check', () => {
  test('finds no difference after deposits (the faucet ones and one the block follower credited), and runs once a day', async () => {
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM followed_token_accounts`.execute(
      env.app.db,
    );
    // Two token accounts (USDC, native) per wallet: the finance account's and the four users'.
    expect(Number(rows[0]!.n)).toBe(10);

    // A deposit from a wallet outside the platform, credited by the block follower (held in pending
    // until its block is finalized): balance + pending equals the chain from the credit on.
    const follower = createBlockFollower({ ...env.app, logger: silent });
    await followerCatchUp(follower);
    const outsider = signerFromSeed(randomBytes(32));
    await fundUsdc(env.app.rpc, platform, outsider.publicKey.toBase58(), 1_500_000n);
    const { blockhash, lastValidBlockHeight } = await env.app.rpc.getLatestBlockhash('confirmed');
    const transfer = buildTransfer({
      feePayer: platform.signers.fee_payer.publicKey,
      recentBlockhash: blockhash,
      legs: [
        {
          mint: platform.usdcMint,
          decimals: USDC_DECIMALS,
          from: outsider.publicKey,
          to: new PublicKey(users[3]!.walletAddress),
          amount: 1_500_000n,
        },
      ],
    });
    const signed = signTransaction(transfer, [platform.signers.fee_payer, outsider]);
    await sendAndConfirm(env.app.rpc, { ...signed, lastValidBlockHeight }, { commitment: 'confirmed' });
    await until(
      'the follower credits the deposit',
      () => followerCatchUp(follower),
      (n) => n === 1,
      20_000,
    );
    const money = await env.app.ledger.money(users[3]!.id);
    expect(money.availableMicro + money.pendingMicro).toBe(5_500_000n);

    const result = await check();
    expect(result).toEqual({
      day: today,
      skipped: false,
      accounts: 10,
      differed: 0,
      moving: 0,
      mismatches: 0,
    });
    expect(await dayRow(today)).toMatchObject({ accounts: 10, mismatches: 0, finished_at: expect.any(Date) });
    expect((await env.app.metrics.balanceCheckLastRun.get()).values[0]!.value).toBeGreaterThan(0);

    // The same day again: nothing is read, the day's row is left as it was.
    expect(await check()).toMatchObject({ skipped: true, accounts: 0 });
  });

  test('USDC the ledger does not know and a credit the chain never saw are balance mismatches; a payment settling meanwhile is not', async () => {
    const [sender, onChainOnly, ledgerOnly, recipient] = users as [Account, Account, Account, Account];
    await fundUsdc(env.app.rpc, platform, onChainOnly.walletAddress, 700_000n);
    await env.app.ledger.record({
      kind: 'deposit',
      idempotencyKey: 'bc-test:credit-without-chain',
      legs: [
        { account: { kind: 'external' }, units: -300_000n, counts: 'none' },
        { account: { kind: 'user', accountId: ledgerOnly.id }, units: 300_000n, counts: 'none' },
      ],
    });
    // In flight at the first look: debited and held in the ledger, not on chain yet (no worker here);
    // it lands and confirms during the pause.
    const send = await commitSend(env.app, sender.id, { toHandle: recipient.handle, amountMicro: 250_000n });
    let settled = false;

    const result = await check({
      force: true,
      recheckAfterMs: 5_000,
      pause: async (ms) => {
        expect(ms).toBe(5_000);
        expect(await settlePayment(env.app, send.chainTransactionId)).toBe('confirmed');
        settled = true;
      },
    });
    expect(settled).toBe(true);
    // The sender and recipient differed at the first look only.
    expect(result).toEqual({
      day: today,
      skipped: false,
      accounts: 10,
      differed: 4,
      moving: 0,
      mismatches: 2,
    });

    const rows = await mismatchRows(today);
    expect(rows).toEqual(
      [
        {
          movement_id: '00000000-0000-0000-0000-000000000000',
          signature: `balance-check:${today}:${usdcAccount(onChainOnly)}`,
          ledger_amount: '2000000',
          chain_amount: '2700000',
          commitment: 'confirmed',
          detail: expect.stringContaining(
            `@${onChainOnly.handle}'s USDC token account ${usdcAccount(onChainOnly)}`,
          ),
        },
        {
          movement_id: '00000000-0000-0000-0000-000000000000',
          signature: `balance-check:${today}:${usdcAccount(ledgerOnly)}`,
          ledger_amount: '3300000',
          chain_amount: '3000000',
          commitment: 'confirmed',
          detail: expect.stringContaining(
            `@${ledgerOnly.handle}'s USDC token account ${usdcAccount(ledgerOnly)}`,
          ),
        },
      ].sort((a, b) => (a.signature < b.signature ? -1 : 1)),
    );
    expect(rows.find((row) => row.chain_amount === '2700000')!.detail).toContain(
      'holds 2700000 micro-USD on chain; the ledger says 2000000',
    );

    // Finance is told of each, once per token account and day.
    const staged = await stagedMismatches();
    expect(staged).toHaveLength(2);
    for (const event of staged) expect(event.account_id).toBe(finance.id);
    expect(
      staged
        .map((event) => event.data)
        .sort((a, b) => Number(a.chain_amount_usd) - Number(b.chain_amount_usd)),
    ).toEqual([
      expect.objectContaining({
        ledger_amount_usd: 2,
        chain_amount_usd: 2.7,
        swap_tx: `balance-check:${today}:${usdcAccount(onChainOnly)}`,
      }),
      expect.objectContaining({
        ledger_amount_usd: 3.3,
        chain_amount_usd: 3,
        swap_tx: `balance-check:${today}:${usdcAccount(ledgerOnly)}`,
      }),
    ]);

    expect(await dayRow(today)).toMatchObject({ accounts: 10, mismatches: 2, finished_at: expect.any(Date) });
    expect((await env.app.metrics.balanceCheckMismatches.get()).values[0]!.value).toBe(2);
    const counted = (await env.app.metrics.reconciliations.get()).values.find(
      (v) => v.labels.status === 'balance_mismatch',
    );
    expect(counted?.value).toBe(2);

    // Finance's day summary counts them, and its money totals (what moved) leave the balances out.
    const [summary] = await reconciliationSummary(env.app, today, today);
    expect(summary!.exceptions.balance_mismatch).toBe(2);
    expect(summary!.ledgerTotalMicro).toBe(0n);
    expect(summary!.chainTotalMicro).toBe(0n);
  }, 60_000);

  test('a difference whose amounts change between the two looks is not judged that day', async () => {
    const [, onChainOnly, ledgerOnly] = users as [Account, Account, Account];
    const tomorrow = new Date(Date.now() + 86_400_000);
    const day = tomorrow.toISOString().slice(0, 10);
    const result = await check({
      now: tomorrow,
      pause: async () => {
        await fundUsdc(env.app.rpc, platform, onChainOnly.walletAddress, 1n);
      },
    });
    expect(result).toMatchObject({ day, differed: 2, moving: 1, mismatches: 1 });
    expect((await mismatchRows(day)).map((row) => row.signature)).toEqual([
      `balance-check:${day}:${usdcAccount(ledgerOnly)}`,
    ]);
    // A difference found again on another day is told again.
    expect(await stagedMismatches()).toHaveLength(3);
  }, 60_000);

  test('a run stopped midway gives its day back', async () => {
    const later = new Date(Date.now() + 2 * 86_400_000);
    const day = later.toISOString().slice(0, 10);
    const stopping = new AbortController();
    await expect(
      check({
        now: later,
        signal: stopping.signal,
        recheckAfterMs: 60_000,
        // Stopped as the pause begins, as the indexer role's stop would.
        pause: (ms, signal) => {
          stopping.abort();
          return sleep(ms, undefined, { signal });
        },
      }),
    ).rejects.toThrow(/abort/i);
    expect(await dayRow(day)).toBeUndefined();
    expect(await check({ now: later })).toMatchObject({ day, skipped: false, mismatches: 2 });
  }, 60_000);
});
