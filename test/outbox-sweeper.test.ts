import { setTimeout as sleep } from 'node:timers/promises';
import { UnrecoverableError, Worker } from 'bullmq';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRedis } from '../src/adapters/redis/index.js';
import { PAYMENT_ATTEMPTS, PAYMENT_BACKOFF, PAYMENTS_QUEUE } from '../src/adapters/redis/payments-queue.js';
import type { PlatformChain } from '../src/adapters/solana/index.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { purgeExpiredIdempotencyKeys } from '../src/app/write-path/idempotency-keys.js';
import { sweepOutbox } from '../src/app/write-path/outbox-sweep.js';
import type { Account } from '../src/domain/accounts/account.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { processorsFor } from '../workers/processors.js';
import type { RunningRole } from '../workers/role.js';
import { startWorkerRole } from '../workers/worker.role.js';
import { onChainUsdc, settledMoney } from './support/balances.js';
import { depositUsdc } from './support/deposit.js';
import { paymentsSettled } from './support/settled.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * The outbox sweeper: every unfinished outbox row gets a live payments job, whatever happened to
 * the request that committed it or to its first job. The worker role is started only where a test
 * says so, so a row committed before it has nobody to send it.
 */
let env: TestEnv;
let platform: PlatformChain;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  platform = await env.app.bootstrapChain();
});
afterAll(async () => {
  await env?.close();
});

async function funded(handle: string, micro: bigint): Promise<Account> {
  const account = await createAccount(env.app, { handle });
  await depositUsdc(env.app, platform, account, micro);
  return account;
}

async function jobState(chainTransactionId: string): Promise<string> {
  const job = await env.app.payments.queue.getJob(env.app.payments.jobIdOf(chainTransactionId));
  return job ? await job.getState() : 'none';
}

async function until(condition: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('outbox sweeper', { timeout: 120_000 }, () => {
  test('a payment stuck in signed whose job failed is revived by the worker role and paid once', async () => {
    const author = await funded('sweep_failed', 3_000_000n);
    const post = await commitPost(env.app, author.id, { type: 'post', content: 'my job failed' });

    // A real BullMQ failure of its job (a worker that gives up on it), then nothing left running.
    const connection = createRedis(env.app.stack.redis.url, 'worker');
    const quitter = new Worker(PAYMENTS_QUEUE, () => Promise.reject(new UnrecoverableError('gave up')), {
      connection,
      prefix: env.app.config.REDIS_PREFIX,
    });
    try {
      await env.app.payments.enqueue(post.chainTransactionId);
      await until(async () => (await jobState(post.chainTransactionId)) === 'failed', 'the job to fail');
    } finally {
      await quitter.close();
      connection.disconnect();
    }
    // The failed job holds its id: enqueueing again (what a start-up resume did) adds nothing.
    await env.app.payments.enqueue(post.chainTransactionId);
    expect(await jobState(post.chainTransactionId)).toBe('failed');

    let role: RunningRole | undefined;
    try {
      role = await startWorkerRole(env.app, processorsFor(env.app));
      await paymentsSettled(env.app.db, 60_000);
    } finally {
      await role?.stop();
    }
    const row = await env.app.db
      .selectFrom('chain_transactions')
      .select(['status', 'attempts'])
      .where('id', '=', post.chainTransactionId)
      .executeTakeFirstOrThrow();
    expect(['confirmed', 'finalized']).toContain(row.status);
    expect((await settledMoney(env.app, author.id)).availableMicro).toBe(2_000_000n);
    expect(await onChainUsdc(env.app, platform, author.walletAddress)).toBe(2_000_000n);
    // The job that paid it is the sweeper's: capped backoff, and retried for as long as it takes.
    const job = await env.app.payments.queue.getJob(env.app.payments.jobIdOf(post.chainTransactionId));
    expect(job?.opts.backoff).toEqual({ type: PAYMENT_BACKOFF });
    expect(job?.opts.attempts).toBe(PAYMENT_ATTEMPTS);
  });

  test('a sweep covers a backlog in bounded batches with a cursor, and a row already queued costs nothing', async () => {
    const author = await funded('sweep_batches', 4_000_000n);
    const posts = [];
    for (const n of [1, 2, 3]) {
      posts.push(await commitPost(env.app, author.id, { type: 'post', content: `backlog ${n}` }));
    }
    const ids = new Set(posts.map((p) => p.chainTransactionId));

    const first = await sweepOutbox(env.app, null, { minAgeMs: 0, batch: 2 });
    expect(first).toMatchObject({ seen: 2, resubmitted: 2 });
    expect(first.next).not.toBeNull();
    const second = await sweepOutbox(env.app, first.next, { minAgeMs: 0, batch: 2 });
    expect(second).toMatchObject({ seen: 1, resubmitted: 1, next: null });
    for (const id of ids) expect(await jobState(id)).toBe('waiting');

    // Every row has its job now: a second pass (another worker's sweeper, say) adds nothing.
    const again = await sweepOutbox(env.app, null, { minAgeMs: 0, batch: 10 });
    expect(again).toMatchObject({ seen: 3, resubmitted: 0, next: null });
    // Young rows are left to the request that committed them.
    expect(await sweepOutbox(env.app, null, { minAgeMs: 60_000 })).toMatchObject({ seen: 0 });

    let role: RunningRole | undefined;
    try {
      role = await startWorkerRole(env.app, processorsFor(env.app));
      await paymentsSettled(env.app.db, 60_000);
    } finally {
      await role?.stop();
    }
    expect((await settledMoney(env.app, author.id)).availableMicro).toBe(1_000_000n);
    expect(await onChainUsdc(env.app, platform, author.walletAddress)).toBe(1_000_000n);
  });

  test('Idempotency-Key records past the 24 h TTL are purged in bounded batches; younger ones stay', async () => {
    const owner = await createAccount(env.app, { handle: 'purge_owner' });
    const row = (key: string, hoursAgo: number) => ({
      account_id: owner.id,
      key,
      request_hash: 'h',
      response_status: 201,
      response_body: '{}',
      created_at: sql<Date>`now() - make_interval(hours => ${hoursAgo})`,
    });
    await env.app.db
      .insertInto('idempotency_keys')
      .values([row('old-1', 25), row('old-2', 48), row('old-3', 24 * 30), row('young', 23)])
      .execute();
    const keys = async () =>
      (
        await env.app.db
          .selectFrom('idempotency_keys')
          .select('key')
          .where('account_id', '=', owner.id)
          .orderBy('key')
          .execute()
      ).map((r) => r.key);

    expect(await purgeExpiredIdempotencyKeys(env.app.db, 2)).toBe(2);
    expect(await keys()).toHaveLength(2);

    // The worker role purges the rest by itself (its purge loop's first round runs at start).
    await env.app.db.insertInto('idempotency_keys').values(row('old-4', 30)).execute();
    let role: RunningRole | undefined;
    try {
      role = await startWorkerRole(env.app, processorsFor(env.app));
      await until(async () => (await keys()).length === 1, 'the purge');
    } finally {
      await role?.stop();
    }
    expect(await keys()).toEqual(['young']);
  });
});
