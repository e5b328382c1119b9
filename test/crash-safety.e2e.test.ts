import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { PublicKey } from '@solana/web3.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { associatedTokenAccount, type PlatformChain } from '../src/adapters/solana/index.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import type { Account } from '../src/domain/accounts/account.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { depositUsdc } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { killChild, startRoleChild } from './support/role-child.js';

/**
 * The payments worker as a real child process, killed with SIGKILL at the two dangerous moments:
 * after the outbox commit and before sending, and after sending and before the confirmation is
 * recorded. After a restart each payment exists exactly once on chain and in the ledger.
 */
let env: TestEnv;
let platform: PlatformChain;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await env?.close();
});

const startWorker = () => startRoleChild(env, 'worker', children);

async function funded(handle: string, micro: bigint): Promise<Account> {
  const account = await createAccount(env.app, { handle });
  await depositUsdc(env.app, platform, account, micro);
  return account;
}

async function usdc(owner: string): Promise<bigint> {
  const ata = associatedTokenAccount(platform.usdcMint, new PublicKey(owner));
  const { value } = await env.app.rpc.call<{ value: { amount: string } }>('getTokenAccountBalance', [
    ata.toBase58(),
  ]);
  return BigInt(value.amount);
}

async function statusOf(id: string): Promise<string> {
  const row = await env.app.db
    .selectFrom('chain_transactions')
    .select('status')
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return row.status;
}

async function until(condition: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('payments worker crash safety', { timeout: 180_000 }, () => {
  test('killed after the outbox commit, before sending: the restarted worker pays exactly once', async () => {
    const author = await funded('crash_a', 3_000_000n);
    const worker = await startWorker();
    await killChild(worker); // a worker that died: nothing will send what is committed next
    const post = await commitPost(env.app, author.id, { type: 'post', content: 'committed, unsent' });
    expect(await env.app.rpc.getSignatureStatuses([post.swapTx])).toEqual([null]);

    const restarted = await startWorker(); // its outbox sweeper hands every unfinished row back
    await until(
      async () => ['confirmed', 'finalized'].includes(await statusOf(post.chainTransactionId)),
      'confirmation',
    );
    await killChild(restarted);
    expect(await usdc(author.walletAddress)).toBe(2_000_000n);
    expect((await env.app.ledger.money(author.id)).availableMicro).toBe(2_000_000n);
  });

  test('killed after sending, before recording the confirmation: no second payment', async () => {
    const author = await funded('crash_b', 3_000_000n);
    const worker = await startWorker();
    const post = await commitPost(env.app, author.id, { type: 'post', content: 'sent, unrecorded' });
    // The moment the transaction is on chain but the outbox row still says 'signed': the worker
    // sees it executed within milliseconds, so its write of 'sent' is held on this row lock
    // until the kill (and the statement it left waiting is ended with it).
    const locker = new pg.Client({ connectionString: env.config.DATABASE_URL });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT id FROM chain_transactions WHERE id = $1 FOR UPDATE', [
        post.chainTransactionId,
      ]);
      await env.app.payments.enqueue(post.chainTransactionId);
      await until(
        async () => (await env.app.rpc.getSignatureStatuses([post.swapTx]))[0] !== null,
        'the send',
      );
      await killChild(worker);
      await locker.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))',
      );
      await locker.query('ROLLBACK');
    } finally {
      await locker.end();
    }
    expect(await statusOf(post.chainTransactionId)).toBe('signed');

    const restarted = await startWorker();
    await until(
      async () => ['confirmed', 'finalized'].includes(await statusOf(post.chainTransactionId)),
      'confirmation',
    );
    await killChild(restarted);
    expect(await usdc(author.walletAddress)).toBe(2_000_000n);
    expect((await env.app.ledger.money(author.id)).availableMicro).toBe(2_000_000n);
    const history = await env.app.rpc.call<Array<{ memo: string | null }>>('getSignaturesForAddress', [
      associatedTokenAccount(platform.usdcMint, new PublicKey(author.walletAddress)).toBase58(),
      { commitment: 'confirmed' },
    ]);
    // One landed transaction carries this post's memo: the payment, once.
    expect(history.filter((entry) => entry.memo?.includes(post.id))).toHaveLength(1);
  });
});
