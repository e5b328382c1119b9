import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRedis } from '../src/adapters/redis/index.js';
import { COMPLETED_KEPT, PAYMENT_SIGNALS_TOPIC, paymentIdsOf } from '../src/adapters/redis/payments-queue.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { settledMoney } from './support/balances.js';
import { openServiceHarness, type ServiceHarness } from './support/service-harness.js';

/*
 * PAYMENT_THREADS (issue 21): the payments queue is served from worker threads of the worker role
 * by default, so that settling does not take the API's event loop; 0 serves it on that loop. Either
 * way a paid post is answered with its payment executed and ends confirmed, charged once. Which
 * side ran the job is told by its `processedBy` (the BullMQ Worker's name: `payments-t<thread>-<n>`
 * in a thread, `payments-<n>` on the event loop).
 */
describe.each([
  { threads: '1', where: 'in a thread of its own', worker: /^payments-t1-\d+$/ },
  { threads: '0', where: 'on the event loop', worker: /^payments-\d+$/ },
])('PAYMENT_THREADS=$threads: payments settle $where', ({ threads, worker }) => {
  let h: ServiceHarness;

  beforeAll(async () => {
    h = await openServiceHarness({ PAYMENT_THREADS: threads });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('a paid post is answered with its payment executed, ends confirmed and is charged once', async () => {
    const author = await h.member(`pt_author${threads}`, 3_000_000n);
    const answers = await Promise.all(
      [1, 2].map((n) => h.call(author, 'POST', '/posts', { type: 'post', content: `threaded ${n}` })),
    );
    expect(answers.map((answer) => answer.status)).toEqual([201, 201]);

    const rows = () =>
      h.env.app.db
        .selectFrom('chain_transactions as tx')
        .innerJoin('posts', 'posts.movement_id', 'tx.movement_id')
        .select(['tx.id', 'tx.status'])
        .where('posts.author_id', '=', author.account.id)
        .execute();
    await expect
      .poll(
        async () => (await rows()).map((row) => (row.status === 'finalized' ? 'confirmed' : row.status)),
        {
          timeout: 15_000,
        },
      )
      .toEqual(['confirmed', 'confirmed']);
    expect((await settledMoney(h.env.app, author.account.id)).availableMicro).toBe(1_000_000n);

    // The row turns confirmed inside the job; BullMQ marks the job completed only after the
    // processor returns, so the jobs are waited for rather than read at once. Handed off together,
    // the two may share one job (PAYMENT_HANDOFF_MS).
    const payments = h.env.app.payments;
    const rowIds = (await rows()).map((row) => row.id);
    const carrying = async () =>
      (await payments.queue.getJobs(['active', 'completed', 'waiting', 'delayed'])).filter((job) =>
        paymentIdsOf(job.data).some((id) => rowIds.includes(id)),
      );
    const completed = async () => {
      const jobs = await carrying();
      const states = await Promise.all(jobs.map((job) => job.getState()));
      return states.every((state) => state === 'completed') ? jobs : [];
    };
    await expect
      .poll(async () => (await completed()).flatMap((job) => paymentIdsOf(job.data)).length, {
        timeout: 15_000,
      })
      .toBe(rowIds.length);
    const jobs = await completed();
    expect(jobs.flatMap((job) => paymentIdsOf(job.data)).sort()).toEqual([...rowIds].sort());
    for (const job of jobs) expect(job.processedBy).toMatch(worker);
    // A job carries its rows' signed bytes: completed ones are kept a day, but never more than
    // COMPLETED_KEPT of them (Redis memory stays bounded at any rate).
    for (const job of jobs) {
      expect(
        job.data.signed?.[job.data.chainTransactionId ?? job.data.chainTransactionIds![0]!],
      ).toBeDefined();
      expect(job.opts.removeOnComplete).toEqual({ age: 24 * 3600, count: COMPLETED_KEPT });
    }
  });

  test("a worker of the request's own process tells it without Redis; a sweeper's job through Redis", async () => {
    const { app } = h.env;
    const heard: Array<{ jobId: string; kind: string }> = [];
    const listener = createRedis(app.stack.redis.url, 'client');
    try {
      await listener.subscribe(`${app.config.REDIS_PREFIX}:live:${PAYMENT_SIGNALS_TOPIC}`);
      listener.on('message', (_channel: string, text: string) => heard.push(JSON.parse(text)));
      const author = await h.member(`pt_local${threads}`, 3_000_000n);

      // Handed off by this process's request: the answer says executed, and nothing was published.
      const answer = await h.call(author, 'POST', '/posts', { type: 'post', content: 'told here' });
      expect(answer.status).toBe(201);
      const paid = (await answer.json()) as { swap_tx: string };
      const row = await app.db
        .selectFrom('chain_transactions')
        .select(['id', 'status'])
        .where('signature', '=', paid.swap_tx)
        .executeTakeFirstOrThrow();
      expect(['sent', 'confirmed', 'finalized']).toContain(row.status);

      // Queued with no origin (as the outbox sweeper does): its signal goes through Redis, and
      // this process hears it there.
      const swept = await commitPost(app, author.account.id, { type: 'post', content: 'swept' });
      const jobId = app.payments.jobIdOf(swept.chainTransactionId);
      const wait = app.payments.waitFor(jobId, 15_000);
      await wait.listening;
      await app.payments.enqueue(swept.chainTransactionId);
      expect((await wait.signal).kind).toBe('sent');
      await expect.poll(() => heard.map((message) => message.jobId), { timeout: 5_000 }).toContain(jobId);
      expect(heard.map((message) => message.jobId)).not.toContain(app.payments.jobIdOf(row.id));
    } finally {
      listener.disconnect();
    }
  });
});
