import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createRedis } from '../src/adapters/redis/index.js';
import {
  createPaymentsQueue,
  PAYMENT_SIGNALS_TOPIC,
  paymentIdsOf,
  type PaymentsQueue,
} from '../src/adapters/redis/payments-queue.js';
import { awaitPayment, FOLLOW_GRACE_MS, RECHECK_AFTER_MS } from '../src/app/write-path/await-payment.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { paymentsSettled } from './support/settled.js';

/**
 * awaitPayment listens before it enqueues, so a new payment needs no outbox read; a payment whose
 * job already exists (a retry, a second caller) or whose signal was lost learns where it is from the
 * row within RECHECK_AFTER_MS or so, instead of waiting WRITE_TIMEOUT_MS for signals that already
 * passed.
 */
let h: ServiceHarness;
let alice: Member;

beforeAll(async () => {
  h = await openServiceHarness({ WRITE_TIMEOUT_MS: '8000' });
  alice = await h.member('await_alice', 10_000_000n);
});
afterAll(() => h?.close());

test('a new payment answers sent; awaiting it again answers from the row without waiting', async () => {
  const post = await commitPost(h.env.app, alice.account.id, { type: 'post', content: 'await me' });
  const first = await awaitPayment(h.env.app, post);
  expect(first).toEqual({ settled: 'sent', swapTx: post.swapTx });

  // The job exists (in flight or done): its 'sent' event is past.
  const started = Date.now();
  const again = await awaitPayment(h.env.app, post);
  expect(['sent', 'confirmed']).toContain(again.settled);
  expect(again.swapTx).toBe(post.swapTx);
  expect(Date.now() - started).toBeLessThan(2_000);

  await paymentsSettled(h.env.app.db);
  const settled = await awaitPayment(h.env.app, post);
  expect(settled).toEqual({ settled: 'confirmed', swapTx: post.swapTx });
});

test('a paid write hears its payment through one signal, in-process from a worker of its own process, not by reading the queue event stream', async () => {
  const { REDIS_PREFIX: prefix } = h.env.app.config;
  const monitor = await createRedis(h.env.app.stack.redis.url, 'client').monitor();
  const ours: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args.some((arg) => arg.startsWith(`${prefix}:`))) ours.push(args);
  });
  const jobIds: string[] = [];
  const rowIds: string[] = [];
  const named = (command: string) => ours.filter((args) => args[0]?.toLowerCase() === command);
  /** This test's payments' signals, as `kind jobId`; other tests' payments may still be signalling. */
  const published = () =>
    named('publish')
      .filter((args) => args[1] === `${prefix}:live:${PAYMENT_SIGNALS_TOPIC}`)
      .map((args) => JSON.parse(args[2]!) as { jobId: string; kind: string })
      .filter((signal) => jobIds.includes(signal.jobId))
      .map((signal) => `${signal.kind} ${signal.jobId}`);
  // The worker (a thread of this process) tells this process's requests through `deliver`.
  const { payments } = h.env.app;
  const deliver = payments.deliver;
  const delivered: string[] = [];
  payments.deliver = (jobId, signal) => {
    if (jobIds.includes(jobId)) delivered.push(`${signal.kind} ${jobId}`);
    deliver(jobId, signal);
  };
  try {
    for (let i = 0; i < 3; i++) {
      const post = await commitPost(h.env.app, alice.account.id, {
        type: 'post',
        content: `signal ${i}`,
      });
      rowIds.push(post.chainTransactionId);
      jobIds.push(h.env.app.payments.jobIdOf(post.chainTransactionId));
      expect(await awaitPayment(h.env.app, post)).toEqual({ settled: 'sent', swapTx: post.swapTx });
    }
    // Until the three are confirmed (a slot or two after 'sent'), and a little longer for MONITOR
    // lines that trail: a 'done' after a 'sent' would show by then.
    const deadline = Date.now() + 15_000;
    const confirmed = async () =>
      (
        await h.env.app.db
          .selectFrom('chain_transactions')
          .select('id')
          .where('id', 'in', rowIds)
          .where('status', 'in', ['confirmed', 'finalized'])
          .execute()
      ).length;
    while ((await confirmed()) < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    monitor.disconnect();
    payments.deliver = deliver;
  }
  expect(named('xread')).toEqual([]);
  // One 'sent' for each of the three, nothing more: 'done' is for a payment that ended without
  // one (failed on chain), and the request has its answer once it heard 'sent'. Handed off by this
  // process, they were told in-process: none was published.
  expect(delivered.sort()).toEqual(jobIds.map((id) => `sent ${id}`).sort());
  expect(published()).toEqual([]);
});

test('a payment whose signals are lost is answered from the row soon after, not at WRITE_TIMEOUT_MS', async () => {
  const real = h.env.app.payments;
  // Hears nothing but the end of its wait: every signal of the worker is lost.
  const deaf: PaymentsQueue = {
    ...real,
    waitFor: (jobId, timeoutMs) => {
      const wait = real.waitFor(jobId, timeoutMs);
      return {
        ...wait,
        signal: wait.signal.then((s) => (s.kind === 'timeout' ? s : new Promise<never>(() => {}))),
      };
    },
  };
  const post = await commitPost(h.env.app, alice.account.id, { type: 'post', content: 'deaf' });
  // Settled here first, so the first look finds the row final however slow the machine is; the
  // job awaitPayment enqueues still runs and signals 'done', which the deaf wait never hears.
  expect(await settlePayment(h.env.app, post.chainTransactionId)).toBe('confirmed');
  const started = Date.now();
  const awaited = await awaitPayment({ ...h.env.app, payments: deaf }, post);
  expect(awaited).toEqual({ settled: 'confirmed', swapTx: post.swapTx });
  const elapsed = Date.now() - started;
  // Answered at the first look, RECHECK_AFTER_MS; WRITE_TIMEOUT_MS is 8 s in this file.
  expect(elapsed).toBeGreaterThanOrEqual(RECHECK_AFTER_MS - 5);
  expect(elapsed).toBeLessThan(4_000);
});

/** A TCP port that accepts connections and never answers: a Redis that hangs. */
async function silentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test('a committed payment whose enqueue hangs answers pending with its swap_tx in bounded time; the sweeper settles it', async () => {
  const hung = await silentServer();
  // Its queue on the hung Redis; the signals on the app's own live events, which answer.
  const queue = createPaymentsQueue(hung.url, h.env.app.config.REDIS_PREFIX, h.env.app.liveEvents);
  try {
    const writeTimeoutMs = 1_000;
    const deps = { ...h.env.app, payments: queue, writeTimeoutMs };
    const post = await commitPost(deps, alice.account.id, { type: 'post', content: 'redis hangs' });
    const started = Date.now();
    const awaited = await awaitPayment(deps, post);
    expect(awaited).toEqual({ settled: 'pending', swapTx: post.swapTx });
    // Bounded by WRITE_TIMEOUT_MS plus the grace (a generous margin for a loaded machine).
    expect(Date.now() - started).toBeLessThan(writeTimeoutMs + FOLLOW_GRACE_MS + 5_000);

    // Nothing enqueued it; the worker role's sweeper of this harness takes it to confirmed.
    await paymentsSettled(h.env.app.db, 60_000);
    const row = await h.env.app.db
      .selectFrom('chain_transactions')
      .select('status')
      .where('id', '=', post.chainTransactionId)
      .executeTakeFirstOrThrow();
    expect(['confirmed', 'finalized']).toContain(row.status);
  } finally {
    await queue.close(); // bounded even against a Redis that never answers
    await hung.close();
  }
});

test('payments handed off together travel as one job and each request hears its own signal', async () => {
  const bob = await h.member('await_bob', 10_000_000n);
  const posts = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      commitPost(h.env.app, i % 2 ? alice.account.id : bob.account.id, {
        type: 'post',
        content: `together ${i}`,
      }),
    ),
  );
  // Handed off in one turn: well inside one gathering (PAYMENT_HANDOFF_MS).
  const answers = await Promise.all(posts.map((post) => awaitPayment(h.env.app, post)));
  expect(answers).toEqual(posts.map((post) => ({ settled: 'sent', swapTx: post.swapTx })));

  const ids = posts.map((post) => post.chainTransactionId).sort();
  const jobs = await h.env.app.payments.queue.getJobs(['active', 'completed', 'waiting']);
  const carrying = jobs.filter((job) => paymentIdsOf(job.data).some((id) => ids.includes(id)));
  expect(carrying).toHaveLength(1);
  expect(paymentIdsOf(carrying[0]!.data).sort()).toEqual(ids);

  await paymentsSettled(h.env.app.db);
  const rows = await h.env.app.db
    .selectFrom('chain_transactions')
    .select(['status'])
    .where('id', 'in', ids)
    .execute();
  expect(rows.map((row) => row.status)).toEqual(ids.map(() => 'confirmed'));
});

test('a payment handed off again that leads a new gathering does not drop the others of it', async () => {
  const carol = await h.member('await_carol', 5_000_000n);
  const post = (content: string) => commitPost(h.env.app, carol.account.id, { type: 'post', content });
  const first = await post('again 1');
  await awaitPayment(h.env.app, first);
  // Twice more it leads a gathering (its request resumed, say): each time with a new payment,
  // whose job must be queued at once, not found to be the earlier gathering's and dropped.
  for (const content of ['again 2', 'again 3']) {
    const other = await post(content);
    const started = Date.now();
    const [, answer] = await Promise.all([awaitPayment(h.env.app, first), awaitPayment(h.env.app, other)]);
    expect(answer).toEqual({ settled: 'sent', swapTx: other.swapTx });
    // Dropped, it would wait for the outbox sweeper (rows 3 s old and more).
    expect(Date.now() - started).toBeLessThan(2_000);
  }
});
