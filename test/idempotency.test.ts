import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPaymentsQueue } from '../src/adapters/redis/payments-queue.js';
import { fundUsdc, type PlatformChain } from '../src/adapters/solana/index.js';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { processorsFor } from '../workers/processors.js';
import type { RunningRole } from '../workers/role.js';
import { startWorkerRole } from '../workers/worker.role.js';
import { onChainNative, onChainUsdc, settledMoney } from './support/balances.js';
import { depositNative } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let server: FastifyInstance;
let worker: RunningRole;
let base: string;
let key: string;
let accountId: string;
let walletAddress: string;
let platform: PlatformChain;

beforeAll(async () => {
  env = await openTestEnv({ RATE_LIMIT_MULTIPLIER: '0' }, { chain: true });
  platform = await env.app.bootstrapChain();
  server = await buildServer(env.app);
  base = await server.listen({ port: 0, host: '127.0.0.1' });
  worker = await startWorkerRole(env.app, processorsFor(env.app));
  const account = await createAccount(env.app, { handle: 'idem_user' });
  accountId = account.id;
  walletAddress = account.walletAddress;
  key = (await createApiKey(env.app.apiKeys, account.id)).key;
  const { signature } = await fundUsdc(env.app.rpc, platform, account.walletAddress, 5_000_000n);
  await env.app.ledger.record({
    kind: 'deposit',
    idempotencyKey: `deposit:${signature}`,
    legs: [
      { account: { kind: 'external' }, amountMicro: -5_000_000n, counts: 'none' },
      { account: { kind: 'user', accountId }, amountMicro: 5_000_000n, counts: 'none' },
    ],
  });
});
afterAll(async () => {
  await worker?.stop();
  await server?.close();
  await env?.close();
});

const post = (idempotencyKey: string, content: string, server = base) =>
  fetch(`${server}/api/v1/posts`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
    },
    body: JSON.stringify({ type: 'post', content }),
  });

const balance = async () => (await settledMoney(env.app, accountId)).availableMicro;

describe('Idempotency-Key on money-moving POSTs', () => {
  test('a replay after completion returns the first answer and charges once', async () => {
    const first = await post('key-after', 'once');
    expect(first.status).toBe(201);
    const firstBody = await first.text();
    const again = await post('key-after', 'once');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstBody);
    expect(await balance()).toBe(4_000_000n);
  });

  test('two requests in flight with one key charge once and answer the same', async () => {
    const [a, b] = await Promise.all([post('key-flight', 'racing'), post('key-flight', 'racing')]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(await a.text()).toBe(await b.text());
    expect(await balance()).toBe(3_000_000n);
  });

  test('the same key with another body is 422', async () => {
    const response = await post('key-after', 'different');
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({
      error: 'idempotency_key_reused',
      message: 'This Idempotency-Key was used with a different request',
    });
    expect(await balance()).toBe(3_000_000n);
  });
});

/**
 * The money move commits before its job is enqueued. A server whose payments queue refuses every
 * command (its Redis connection closed: what a Redis outage looks like to the API) stands for an
 * enqueue that failed after the commit; the worker role of this file still runs against the live
 * Redis, as a healthy worker would while the API's connection is down.
 */
describe('a paid write whose money has moved never answers 5xx', () => {
  let broken: FastifyInstance;
  let brokenBase: string;

  beforeAll(async () => {
    const refusing = createPaymentsQueue(env.app.stack.redis.url, env.app.config.REDIS_PREFIX);
    await refusing.close();
    await expect(refusing.enqueue('00000000-0000-0000-0000-000000000000')).rejects.toThrow();
    broken = await buildServer({ ...env.app, payments: refusing });
    brokenBase = await broken.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await broken?.close();
  });

  const outboxRowOf = (signature: string) =>
    env.app.db
      .selectFrom('chain_transactions')
      .select(['id', 'status'])
      .where((eb) =>
        eb.or([
          eb('signature', '=', signature),
          eb(eb.val(signature), '=', eb.fn.any('replaced_signatures')),
        ]),
      )
      .executeTakeFirstOrThrow();

  async function confirmedBySweeper(signature: string): Promise<void> {
    // No request and no restart enqueues this row: only the worker's outbox sweeper can.
    const deadline = Date.now() + 60_000;
    while ((await outboxRowOf(signature)).status !== 'confirmed') {
      if (Date.now() > deadline) throw new Error(`payment ${signature} was not confirmed within 60 s`);
      await sleep(100);
    }
  }

  test('a post whose enqueue fails answers 202 with its swap_tx; the same key replays it, paid once, and the sweeper confirms it', async () => {
    const balanceBefore = await balance();
    const usdcBefore = await onChainUsdc(env.app, platform, walletAddress);

    const first = await post('key-enqueue-down', 'paid while redis was down', brokenBase);
    expect(first.status).toBe(202);
    const firstText = await first.text();
    const body = JSON.parse(firstText) as { id: string; swap_tx: string; status?: string };
    expect(body.status).toBe('pending');
    expect(body.swap_tx).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    expect((await outboxRowOf(body.swap_tx)).status).not.toBe('failed');

    // The retry a client makes after a 202 (or after a lost answer): the same post, not a second one.
    for (const server of [brokenBase, base]) {
      const again = await post('key-enqueue-down', 'paid while redis was down', server);
      expect(again.status).toBe(202);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await again.text()).toBe(firstText);
    }

    await confirmedBySweeper(body.swap_tx);
    expect(await balance()).toBe(balanceBefore - 1_000_000n);
    expect(await onChainUsdc(env.app, platform, walletAddress)).toBe(usdcBefore - 1_000_000n);
    const posts = await env.app.db
      .selectFrom('posts')
      .select('id')
      .where('content', '=', 'paid while redis was down')
      .execute();
    expect(posts).toEqual([{ id: body.id }]);
  });

  test('GraphQL createPost and REST send whose enqueue fails answer pending with their swap_tx, never an error', async () => {
    const friend = await createAccount(env.app, { handle: 'idem_friend' });
    const balanceBefore = await balance();

    const gql = await fetch(`${brokenBase}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        query:
          'mutation { createPost(input: { type: POST, content: "graphql while redis was down" }) { id swapTx status } }',
      }),
    });
    const result = (await gql.json()) as {
      data?: { createPost: { id: string; swapTx: string; status: string } };
      errors?: unknown[];
    };
    expect(result.errors).toBeUndefined();
    expect(result.data?.createPost.status).toBe('PENDING');

    const sent = await fetch(`${brokenBase}/api/v1/send`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'idempotency-key': 'send-enqueue-down',
      },
      body: JSON.stringify({ to_handle: friend.handle, amount_usd: 0.25 }),
    });
    expect(sent.status).toBe(202);
    const sendBody = (await sent.json()) as { swap_tx: string; status?: string };
    expect(sendBody.status).toBe('pending');

    await confirmedBySweeper(result.data!.createPost.swapTx);
    await confirmedBySweeper(sendBody.swap_tx);
    expect(await balance()).toBe(balanceBefore - 1_250_000n);
    expect(await onChainUsdc(env.app, platform, friend.walletAddress)).toBe(250_000n);
  });

  test('a swap whose enqueue fails answers 202 with its swap_tx; the same key replays it, swapped once', async () => {
    const units = 50n * 10n ** 9n; // 50 native tokens (9 decimals)
    await depositNative(env.app, platform, { id: accountId, walletAddress }, units);
    const usdcBefore = await onChainUsdc(env.app, platform, walletAddress);
    const swap = (server: string) =>
      fetch(`${server}/api/v1/swap-to-usdc`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': 'swap-enqueue-down',
        },
        body: JSON.stringify({ amount_tokens: units.toString() }),
      });
    const first = await swap(brokenBase);
    expect(first.status).toBe(202);
    const firstText = await first.text();
    const body = JSON.parse(firstText) as { amount_usdc: number; swap_tx: string; status?: string };
    expect(body.status).toBe('pending');

    const again = await swap(base);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(firstText);

    await confirmedBySweeper(body.swap_tx);
    expect(await onChainNative(env.app, platform, walletAddress)).toBe(0n);
    expect(await onChainUsdc(env.app, platform, walletAddress)).toBe(
      usdcBefore + BigInt(Math.round(body.amount_usdc * 1_000_000)),
    );
  });
});
