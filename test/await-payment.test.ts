import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createPaymentsQueue } from '../src/adapters/redis/payments-queue.js';
import { createRedis } from '../src/adapters/redis/index.js';
import type { PaymentsQueue } from '../src/adapters/redis/payments-queue.js';
import { awaitPayment, FOLLOW_GRACE_MS, RECHECK_AFTER_MS } from '../src/app/write-path/await-payment.js';
import { createPaidPost } from '../src/app/write-path/create-post.js';
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
  const post = await createPaidPost(h.env.app, alice.account.id, { type: 'post', content: 'await me' });
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

test('a paid write hears its payment through one pub/sub signal, not by reading the queue event stream', async () => {
  const { REDIS_PREFIX: prefix } = h.env.app.config;
  const monitor = await createRedis(h.env.app.stack.redis.url, 'client').monitor();
  const ours: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args.some((arg) => arg.startsWith(`${prefix}:`))) ours.push(args);
  });
  try {
    for (let i = 0; i < 3; i++) {
      const post = await createPaidPost(h.env.app, alice.account.id, {
        type: 'post',
        content: `signal ${i}`,
      });
      expect(await awaitPayment(h.env.app, post)).toEqual({ settled: 'sent', swapTx: post.swapTx });
    }
    // MONITOR lines may trail the replies a little.
    await new Promise((resolve) => setTimeout(resolve, 200));
  } finally {
    monitor.disconnect();
  }
  const named = (command: string) => ours.filter((args) => args[0]?.toLowerCase() === command);
  expect(named('xread')).toEqual([]);
  const signals = named('publish').filter((args) => args[1] === `${prefix}:payments:signals`);
  // 'sent' and 'done' for each of the three.
  expect(signals.map((args) => (JSON.parse(args[2]!) as { kind: string }).kind).sort()).toEqual([
    ...Array<string>(3).fill('done'),
    ...Array<string>(3).fill('sent'),
  ]);
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
  const post = await createPaidPost(h.env.app, alice.account.id, { type: 'post', content: 'deaf' });
  const started = Date.now();
  const awaited = await awaitPayment({ ...h.env.app, payments: deaf }, post);
  expect(['sent', 'confirmed']).toContain(awaited.settled);
  expect(awaited.swapTx).toBe(post.swapTx);
  const elapsed = Date.now() - started;
  // The first look is at RECHECK_AFTER_MS; WRITE_TIMEOUT_MS is 8 s in this file.
  expect(elapsed).toBeGreaterThanOrEqual(RECHECK_AFTER_MS - 5);
  expect(elapsed).toBeLessThan(3_000);
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
  const queue = createPaymentsQueue(hung.url, h.env.app.config.REDIS_PREFIX);
  try {
    const writeTimeoutMs = 1_000;
    const deps = { ...h.env.app, payments: queue, writeTimeoutMs };
    const post = await createPaidPost(deps, alice.account.id, { type: 'post', content: 'redis hangs' });
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
    expect(row.status).toBe('confirmed');
  } finally {
    await queue.close(); // bounded even against a Redis that never answers
    await hung.close();
  }
});
