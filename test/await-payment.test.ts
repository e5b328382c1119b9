import { afterAll, beforeAll, expect, test } from 'vitest';
import { awaitPayment } from '../src/app/write-path/await-payment.js';
import { createPaidPost } from '../src/app/write-path/create-post.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';

/**
 * awaitPayment listens before it enqueues, so a new payment needs no outbox read; a payment whose
 * job already exists (a retry, a second caller) learns where it is from the row, at once, instead of
 * waiting WRITE_TIMEOUT_MS for events that already passed.
 */
let h: ServiceHarness;
let alice: Member;

beforeAll(async () => {
  h = await openServiceHarness({ WRITE_TIMEOUT_MS: '8000' });
  alice = await h.member('await_alice', 5_000_000n);
});
afterAll(() => h?.close());

test('a new payment answers sent; awaiting it again answers from the row without waiting', async () => {
  const post = await createPaidPost(h.env.app, alice.account.id, { type: 'post', content: 'await me' });
  const first = await awaitPayment(h.env.app, post.chainTransactionId);
  expect(first).toEqual({ settled: 'sent', swapTx: post.swapTx });

  // The job exists (in flight or done): its 'sent' event is past.
  const started = Date.now();
  const again = await awaitPayment(h.env.app, post.chainTransactionId);
  expect(['sent', 'confirmed']).toContain(again.settled);
  expect(again.swapTx).toBe(post.swapTx);
  expect(Date.now() - started).toBeLessThan(2_000);

  await paymentsSettled(h.env.app.db);
  const settled = await awaitPayment(h.env.app, post.chainTransactionId);
  expect(settled).toEqual({ settled: 'confirmed', swapTx: post.swapTx });
});
