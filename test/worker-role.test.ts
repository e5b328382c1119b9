import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createRedis } from '../src/adapters/redis/index.js';
import { PAYMENT_BACKOFF, paymentBackoffStrategy } from '../src/adapters/redis/payments-queue.js';
import type { RunningRole } from '../workers/role.js';
import { startWorkerRole } from '../workers/worker.role.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  await env?.close();
});

test('a queue served by several fetchers runs every job once and shares one concurrency limit', async () => {
  const connection = createRedis(env.app.stack.redis.url, 'client');
  const queue = new Queue('fetchers-probe', { connection, prefix: env.app.config.REDIS_PREFIX });
  const runs = new Map<string, number>();
  const fetchersUsed = new Set<string>();
  let inFlight = 0;
  let mostInFlight = 0;
  let role: RunningRole | undefined;
  try {
    role = await startWorkerRole(env.app, [
      {
        queue: 'fetchers-probe',
        concurrency: 6,
        fetchers: 3,
        process: async (job) => {
          runs.set(job.id!, (runs.get(job.id!) ?? 0) + 1);
          fetchersUsed.add(job.processedBy ?? '?');
          mostInFlight = Math.max(mostInFlight, ++inFlight);
          await sleep(60);
          inFlight--;
        },
      },
    ]);
    await queue.addBulk(
      Array.from({ length: 40 }, (_, i) => ({ name: 'probe', data: {}, opts: { jobId: `j${i}` } })),
    );
    const deadline = Date.now() + 20_000;
    while (runs.size < 40 && Date.now() < deadline) await sleep(20);
    await sleep(100); // a duplicate run would show up here

    expect(runs.size).toBe(40);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    // Three Workers of two each ran them: more than two at once, never more than six in all.
    expect([...fetchersUsed].sort()).toEqual(['fetchers-probe-1', 'fetchers-probe-2', 'fetchers-probe-3']);
    expect(mostInFlight).toBeGreaterThan(2);
    expect(mostInFlight).toBeLessThanOrEqual(6);
  } finally {
    await role?.stop();
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    connection.disconnect();
  }
});

test("a queue's backoff strategy serves its jobs' retries (the payments queue's capped backoff)", async () => {
  const connection = createRedis(env.app.stack.redis.url, 'client');
  const queue = new Queue('backoff-probe', { connection, prefix: env.app.config.REDIS_PREFIX });
  const triedAt: number[] = [];
  let role: RunningRole | undefined;
  try {
    role = await startWorkerRole(env.app, [
      {
        queue: 'backoff-probe',
        concurrency: 1,
        backoffStrategy: paymentBackoffStrategy,
        process: () => {
          triedAt.push(Date.now());
          return triedAt.length < 3 ? Promise.reject(new Error('RPC down')) : Promise.resolve('paid');
        },
      },
    ]);
    // BullMQ knows no such type by itself: without the Worker's strategy the first failure fails
    // the job for good ("Unknown backoff strategy").
    const job = await queue.add('probe', {}, { attempts: 10, backoff: { type: PAYMENT_BACKOFF } });
    const deadline = Date.now() + 20_000;
    let state = await job.getState();
    while (state !== 'completed' && state !== 'failed' && Date.now() < deadline) {
      await sleep(50);
      state = await job.getState();
    }
    expect(state).toBe('completed');
    expect(triedAt).toHaveLength(3);
    // 0.5 s then 1 s, less jitter (at most 20%): the second pause is the longer.
    expect(triedAt[1]! - triedAt[0]!).toBeGreaterThanOrEqual(350);
    expect(triedAt[2]! - triedAt[1]!).toBeGreaterThanOrEqual(750);
  } finally {
    await role?.stop();
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    connection.disconnect();
  }
});
