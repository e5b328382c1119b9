import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { paymentIdsOf } from '../src/adapters/redis/payments-queue.js';
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
  });
});
