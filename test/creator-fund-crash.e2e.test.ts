import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { PublicKey } from '@solana/web3.js';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { associatedTokenAccount, type PlatformChain } from '../src/adapters/solana/index.js';
import { eventsShippedThrough } from '../src/app/creator-fund/engagement-source.js';
import { CREATING_TRANSFERS_PER_BATCH } from '../src/app/creator-fund/payout-transaction.js';
import { planEpoch } from '../src/app/creator-fund/run-epoch.js';
import { shipBatch } from '../src/app/indexer/event-shipper.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { commitLike } from '../src/app/write-path/like-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import type { Account } from '../src/domain/accounts/account.js';
import { projectRoot } from '../src/project-root.js';
import { tokenAccountExists } from './support/balances.js';
import { fundedAccount } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * An epoch with many authors (several batches) paid by `npm run cli -- fund-epoch run` in a real
 * child process, killed with SIGKILL after some batches landed and before the others did. The
 * second run finishes the same plan: every author is paid exactly once, on chain and in the ledger.
 */
// 5 batches: the authors were never paid native tokens, so each transfer also creates the
// author's token account, and 8 of those fit a transaction.
const AUTHORS = 40;
const BUDGET = 400_000_000_123n;
let env: TestEnv;
let platform: PlatformChain;
let authors: Account[];
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  env = await openTestEnv({ CREATOR_FUND_EPOCH_BUDGET: BUDGET.toString() }, { chain: true });
  platform = await env.app.bootstrapChain();
}, 60_000);
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await env?.close();
});

async function inGroups<T, R>(
  items: T[],
  size: number,
  run: (item: T, k: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let k = 0; k < items.length; k += size) {
    results.push(...(await Promise.all(items.slice(k, k + size).map((item, j) => run(item, k + j)))));
  }
  return results;
}

/** 0 when the owner has no native token account yet (the fund never paid it). */
async function nativeOnChain(owner: string): Promise<bigint> {
  const ata = associatedTokenAccount(platform.nativeMint, new PublicKey(owner));
  if (!(await tokenAccountExists(env.app, ata))) return 0n;
  const { value } = await env.app.rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
    ata.toBase58(),
  ]);
  return BigInt(value.amount);
}

function fundEpochRun(epochStart: Date): { child: ChildProcessWithoutNullStreams; output: () => string } {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'fund-epoch', 'run', '--epoch', epochStart.toISOString()],
    {
      cwd: projectRoot(),
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/root',
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
        DATA_DIR: env.config.DATA_DIR, // same dev wallet master key as this test's keystore
        DATABASE_URL: env.config.DATABASE_URL!,
        REDIS_URL: env.app.stack.redis.url,
        REDIS_PREFIX: env.config.REDIS_PREFIX,
        CLICKHOUSE_DATABASE: env.config.CLICKHOUSE_DATABASE,
        SOLANA_RPC_URL: env.localnet!.rpcUrl,
        CREATOR_FUND_EPOCH_BUDGET: BUDGET.toString(),
        // The test's epoch starts on a whole second; --epoch checks the start is on a boundary.
        CREATOR_FUND_EPOCH_MS: '1000',
      },
    },
  );
  children.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

async function batchStatuses(epochStart: Date): Promise<string[]> {
  const rows = await env.app.db
    .selectFrom('creator_fund_batches as b')
    .innerJoin('chain_transactions as ct', 'ct.id', 'b.chain_transaction_id')
    .select('ct.status')
    .where('b.epoch_start', '=', epochStart)
    .orderBy('b.batch_index')
    .execute();
  return rows.map((r) => r.status);
}

describe('creator fund crash safety', { timeout: 240_000 }, () => {
  test('an epoch killed after sending some batches pays each author exactly once when run again', async () => {
    // Forty authors with a post each, and one fan who likes every post inside the epoch.
    authors = await inGroups(
      Array.from({ length: AUTHORS }, (_, k) => `cfc_author_${k}`),
      8,
      (handle) => fundedAccount(env.app, platform, handle, 1_000_000n),
    );
    const posts = await inGroups(authors, 8, (author) =>
      commitPost(env.app, author.id, { type: 'post', content: `post of ${author.handle}` }),
    );
    await inGroups(posts, 8, (p) => settlePayment(env.app, p.chainTransactionId));
    // Likes count only from accounts that paid for something: the fan paid for a post.
    const fan = await fundedAccount(env.app, platform, 'cfc_fan', 1_000_000n);
    const fanPost = await commitPost(env.app, fan.id, { type: 'post', content: 'the fan paid' });
    await settlePayment(env.app, fanPost.chainTransactionId);

    const { rows } = await sql<{ now: Date }>`SELECT clock_timestamp() AS now`.execute(env.app.db);
    const start = new Date(Math.floor(rows[0]!.now.getTime() / 1000) * 1000);
    for (const p of posts) await commitLike(env.app, fan.id, p.id, true);
    const end = new Date(Date.now() + 1);
    for (let shipped = false; !shipped;) {
      await shipBatch(env.app);
      shipped = await eventsShippedThrough(env.app.db, end);
    }

    const fundBefore = await nativeOnChain(platform.signers.creator_fund.publicKey.toBase58());
    const plan = await planEpoch(env.app, { start, end });
    expect(plan).toMatchObject({ outcome: 'planned', authorCount: AUTHORS, paidTotal: BUDGET });
    expect(CREATING_TRANSFERS_PER_BATCH).toBe(8);
    expect(plan.batches.map((b) => b.transfers)).toEqual([8, 8, 8, 8, 8]);
    const planned = new Map(
      (
        await env.app.db
          .selectFrom('creator_fund_payouts')
          .select(['account_id', 'amount'])
          .where('epoch_start', '=', start)
          .execute()
      ).map((row) => [row.account_id, row.amount]),
    );
    // Equal scores: equal shares, and the division's remainder one unit each to the lowest ids.
    expect([...planned.values()].reduce((a, b) => a + b, 0n)).toBe(BUDGET);

    // The first run: killed once a batch has confirmed and another is still unsent.
    const first = fundEpochRun(start);
    const deadline = Date.now() + 90_000;
    for (;;) {
      const statuses = await batchStatuses(start);
      if ((statuses.includes('confirmed') || statuses.includes('finalized')) && statuses.includes('signed'))
        break;
      if (first.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(
          `the first run was not caught mid-epoch (${statuses.join(', ')}):\n${first.output()}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const exited = new Promise((resolve) => first.child.once('exit', resolve));
    first.child.kill('SIGKILL');
    await exited;
    const afterKill = await batchStatuses(start);
    expect(afterKill).toContain('signed');
    expect(['confirmed', 'finalized']).toContain(afterKill[0]);

    // The second run finds the plan and finishes it.
    const second = fundEpochRun(start);
    const code = await new Promise<number | null>((resolve) => second.child.once('exit', resolve));
    expect(code, second.output()).toBe(0);
    expect(second.output()).toContain('planned by an earlier run');
    expect((await batchStatuses(start)).map((s) => (s === 'finalized' ? 'confirmed' : s))).toEqual(
      Array(5).fill('confirmed'),
    );

    // Exactly once: every author holds their planned amount, on chain and in the ledger.
    for (const author of authors) {
      const amount = planned.get(author.id)!;
      expect(await nativeOnChain(author.walletAddress), author.handle).toBe(amount);
      const ledger = await env.app.db
        .selectFrom('ledger_accounts')
        .select(['balance', 'pending'])
        .where('account_id', '=', author.id)
        .where(sql<boolean>`currency = 'native'`)
        .executeTakeFirstOrThrow();
      expect(ledger, author.handle).toEqual({ balance: amount, pending: 0n });
    }
    expect(await nativeOnChain(platform.signers.creator_fund.publicKey.toBase58())).toBe(fundBefore - BUDGET);
    // Each batch's memo landed once on chain.
    const history = await env.app.rpc.call<Array<{ memo: string | null; err: unknown }>>(
      'getSignaturesForAddress',
      [
        associatedTokenAccount(platform.nativeMint, platform.signers.creator_fund.publicKey).toBase58(),
        { commitment: 'confirmed' },
      ],
    );
    for (const batch of plan.batches) {
      const memo = `ledgerfeed:fund:${start.toISOString()}:${batch.index}`;
      expect(history.filter((entry) => entry.memo?.includes(memo) && entry.err === null)).toHaveLength(1);
    }
  });
});
