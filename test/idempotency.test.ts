import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  releaseAfterFailure,
  takeOverKey,
  type KeyOwner,
} from '../src/adapters/postgres/idempotency.repository.js';
import { createPaymentsQueue } from '../src/adapters/redis/payments-queue.js';
import { fundUsdc, type PlatformChain } from '../src/adapters/solana/index.js';
import { idempotencyRequestHash } from '../src/api/rest/idempotency.hook.js';
import { buildServer } from '../src/api/server.js';
import { swapToUsdc } from '../src/app/swap/swap-to-usdc.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { commitRepost } from '../src/app/write-path/repost-post.js';
import { commitSend } from '../src/app/write-path/send-usdc.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { processorsFor } from '../workers/processors.js';
import type { RunningRole } from '../workers/role.js';
import { startWorkerRole } from '../workers/worker.role.js';
import { onChainNative, onChainUsdc, settledMoney } from './support/balances.js';
import { depositNative, depositUsdc } from './support/deposit.js';
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
      { account: { kind: 'external' }, units: -5_000_000n, counts: 'none' },
      { account: { kind: 'user', accountId }, units: 5_000_000n, counts: 'none' },
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

/**
 * A second server on this file's app whose payments queue refuses every command (its Redis
 * connection closed: what a Redis outage looks like to the API), while the worker role of this
 * file still runs against the live Redis, as a healthy worker would.
 */
async function serverWithoutQueue(): Promise<{ server: FastifyInstance; base: string }> {
  const refusing = createPaymentsQueue(
    env.app.stack.redis.url,
    env.app.config.REDIS_PREFIX,
    env.app.liveEvents,
  );
  await refusing.close();
  await expect(refusing.enqueue('00000000-0000-0000-0000-000000000000')).rejects.toThrow();
  const server = await buildServer({ ...env.app, payments: refusing });
  return { server, base: await server.listen({ port: 0, host: '127.0.0.1' }) };
}

const outboxRowOf = (signature: string) =>
  env.app.db
    .selectFrom('chain_transactions')
    .select(['id', 'status'])
    .where((eb) =>
      eb.or([eb('signature', '=', signature), eb(eb.val(signature), '=', eb.fn.any('replaced_signatures'))]),
    )
    .executeTakeFirstOrThrow();

async function confirmedBySweeper(signature: string): Promise<void> {
  // No request and no restart enqueues this row: only the worker's outbox sweeper can.
  const deadline = Date.now() + 60_000;
  // The worker's finality follower may have taken it on to 'finalized' between two looks.
  while (!['confirmed', 'finalized'].includes((await outboxRowOf(signature)).status)) {
    if (Date.now() > deadline) throw new Error(`payment ${signature} was not confirmed within 60 s`);
    await sleep(100);
  }
}

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
    ({ server: broken, base: brokenBase } = await serverWithoutQueue());
  });
  afterAll(async () => {
    await broken?.close();
  });

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

/**
 * A key whose first request died (issue 22): the death is simulated on the key's row, as the
 * process would have left it (its owner token, a lease that ran out, and, when its commit went
 * through, the resource that commit recorded); the retry goes through the real API.
 */
describe('an Idempotency-Key whose first request died', () => {
  let broken: FastifyInstance;
  let brokenBase: string;

  beforeAll(async () => {
    ({ server: broken, base: brokenBase } = await serverWithoutQueue());
  });
  afterAll(async () => {
    await broken?.close();
  });

  interface Payer {
    id: string;
    handle: string;
    walletAddress: string;
    key: string;
  }

  async function payer(handle: string, micro: bigint): Promise<Payer> {
    const account = await createAccount(env.app, { handle });
    await depositUsdc(env.app, platform, account, micro);
    return { ...account, key: (await createApiKey(env.app.apiKeys, account.id)).key };
  }

  const keyed = (who: Payer, path: string, idempotencyKey: string, body: unknown, server = base) =>
    fetch(`${server}/api/v1${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${who.key}`,
        'idempotency-key': idempotencyKey,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  /** The row a request owning `key` left: in flight, its lease alive for a minute or run out. */
  async function inFlight(
    who: Payer,
    key: string,
    route: string,
    path: string,
    body: unknown,
    lease: 'alive' | 'expired',
  ): Promise<KeyOwner> {
    const owner: KeyOwner = { accountId: who.id, key, owner: randomUUID() };
    await env.app.db
      .insertInto('idempotency_keys')
      .values({
        account_id: who.id,
        key,
        request_hash: idempotencyRequestHash('POST', `/api/v1${route}`, `/api/v1${path}`, body),
        owner: owner.owner,
        lease_until:
          lease === 'alive' ? sql<Date>`now() + interval '1 minute'` : sql<Date>`now() - interval '1 second'`,
      })
      .execute();
    return owner;
  }

  /** The owner's process died: nobody renews its lease, which runs out. */
  const died = (owner: KeyOwner) =>
    env.app.db
      .updateTable('idempotency_keys')
      .set({ lease_until: sql<Date>`now() - interval '1 second'` })
      .where('account_id', '=', owner.accountId)
      .where('key', '=', owner.key)
      .execute();

  const postsBy = (who: Payer) =>
    env.app.db.selectFrom('posts').select(['id']).where('author_id', '=', who.id).execute();
  const ledgerOf = async (who: Payer) => (await settledMoney(env.app, who.id)).availableMicro;
  const chainOf = (who: Payer) => onChainUsdc(env.app, platform, who.walletAddress);

  test('died before its commit: the retry runs the request as the new owner and charges once', async () => {
    const who = await payer('died_before', 3_000_000n);
    const body = { type: 'post', content: 'died before commit' };
    await inFlight(who, 'k-before', '/posts', '/posts', body, 'expired');

    const retry = await keyed(who, '/posts', 'k-before', body);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull(); // it ran: nothing to replay
    const answer = await retry.text();

    const again = await keyed(who, '/posts', 'k-before', body);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(answer);
    expect(await postsBy(who)).toEqual([{ id: (JSON.parse(answer) as { id: string }).id }]);
    expect(await ledgerOf(who)).toBe(2_000_000n);
    expect(await chainOf(who)).toBe(2_000_000n);
  });

  test('died after its commit: the retry answers 201 with the post the commit recorded and charges nothing more', async () => {
    const who = await payer('died_after', 3_000_000n);
    const body = { type: 'post', content: 'died after commit' };
    const owner = await inFlight(who, 'k-after', '/posts', '/posts', body, 'alive');
    const created = await commitPost(env.app, who.id, body, owner); // committed; never answered
    await died(owner);

    const retry = await keyed(who, '/posts', 'k-after', body);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const answer = await retry.text();
    expect(JSON.parse(answer)).toEqual({
      id: created.id,
      content: 'died after commit',
      type: 'post',
      author: { handle: who.handle, wallet_address: who.walletAddress },
      cost_usd_micro: 1_000_000,
      swap_tx: created.swapTx,
      created_at: created.createdAt.toISOString(),
    });
    const again = await keyed(who, '/posts', 'k-after', body);
    expect(again.status).toBe(201);
    expect(await again.text()).toBe(answer);

    expect(await postsBy(who)).toEqual([{ id: created.id }]);
    expect(await ledgerOf(who)).toBe(2_000_000n);
    expect(await chainOf(who)).toBe(2_000_000n);
  });

  test('died after its commit, the payment still settling: the retry answers 202 pending with its swap_tx', async () => {
    const who = await payer('died_pending', 3_000_000n);
    const body = { type: 'post', content: 'died, still settling' };
    const owner = await inFlight(who, 'k-pending', '/posts', '/posts', body, 'alive');
    const created = await commitPost(env.app, who.id, body, owner);
    await died(owner);

    // The retry's server cannot reach the queue: the payment is still `signed` when it answers.
    const retry = await keyed(who, '/posts', 'k-pending', body, brokenBase);
    expect(retry.status).toBe(202);
    const answer = await retry.text();
    expect(JSON.parse(answer)).toMatchObject({ id: created.id, swap_tx: created.swapTx, status: 'pending' });
    const again = await keyed(who, '/posts', 'k-pending', body);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(answer);

    await confirmedBySweeper(created.swapTx);
    expect(await postsBy(who)).toEqual([{ id: created.id }]);
    expect(await ledgerOf(who)).toBe(2_000_000n);
    expect(await chainOf(who)).toBe(2_000_000n);
  });

  test('a send, a repost and a swap that died after their commit are answered from what they recorded, moved once', async () => {
    const who = await payer('died_money', 5_000_000n);
    const friend = await payer('died_friend', 2_000_000n);
    const friendPost = await commitPost(env.app, friend.id, { type: 'post', content: 'repost me' });

    const sendBody = { to_handle: friend.handle, amount_usd: 0.5 };
    const sendOwner = await inFlight(who, 'k-send', '/send', '/send', sendBody, 'alive');
    const send = await commitSend(
      env.app,
      who.id,
      { toHandle: friend.handle, amountMicro: 500_000n },
      sendOwner,
    );
    await died(sendOwner);
    const sendRetry = await keyed(who, '/send', 'k-send', sendBody);
    expect(sendRetry.status).toBe(201);
    expect(sendRetry.headers.get('idempotent-replayed')).toBe('true');
    expect(await sendRetry.json()).toEqual({
      id: send.id,
      from: who.handle,
      to: friend.handle,
      amount_usd: 0.5,
      swap_tx: send.swapTx,
      created_at: send.createdAt.toISOString(),
    });

    const repostPath = `/posts/${friendPost.id}/repost`;
    const repostOwner = await inFlight(who, 'k-repost', '/posts/:id/repost', repostPath, null, 'alive');
    const repost = await commitRepost(env.app, who.id, friendPost.id, repostOwner);
    await died(repostOwner);
    const repostRetry = await keyed(who, repostPath, 'k-repost', undefined);
    expect(repostRetry.status).toBe(201);
    expect(await repostRetry.json()).toEqual({
      id: repost.id,
      repost_of: friendPost.id,
      cost_usd_micro: 1_000_000,
      swap_tx: repost.swapTx,
    });

    const units = 20n * 10n ** 9n;
    await depositNative(env.app, platform, who, units);
    const swapBody = { amount_tokens: units.toString() };
    const swapOwner = await inFlight(who, 'k-swap', '/swap-to-usdc', '/swap-to-usdc', swapBody, 'alive');
    const swap = await swapToUsdc(env.app, who.id, swapBody, swapOwner);
    await died(swapOwner);
    const swapRetry = await keyed(who, '/swap-to-usdc', 'k-swap', swapBody);
    expect(swapRetry.status).toBe(201);
    expect(await swapRetry.json()).toEqual({
      amount_usdc: Number(swap.quote.amountUsdcMicro) / 1_000_000,
      swap_tx: swap.swapTx,
    });

    const movements = await env.app.db
      .selectFrom('ledger_legs')
      .innerJoin('ledger_accounts', 'ledger_accounts.id', 'ledger_legs.ledger_account_id')
      .select('ledger_legs.movement_id')
      .where('ledger_accounts.account_id', '=', who.id)
      .where('ledger_legs.amount', '<', 0n)
      .execute();
    expect(movements).toHaveLength(3); // the send, the repost, the swap: once each
    const usdcExpected = 5_000_000n - 500_000n - 1_000_000n + swap.quote.amountUsdcMicro;
    expect(await ledgerOf(who)).toBe(usdcExpected);
    expect(await chainOf(who)).toBe(usdcExpected);
    expect(await onChainNative(env.app, platform, who.walletAddress)).toBe(0n);
    expect(await chainOf(friend)).toBe(2_000_000n - 1_000_000n + 500_000n + 500_000n);
  });

  test('a stale owner whose key was taken over commits nothing: its post and its repost fail with 409', async () => {
    const who = await payer('stale_owner', 3_000_000n);
    const friend = await payer('stale_friend', 2_000_000n);
    const friendPost = await commitPost(env.app, friend.id, { type: 'post', content: 'stale target' });
    const body = { type: 'post', content: 'stale commit' };
    const stalePost = await inFlight(who, 'k-stale', '/posts', '/posts', body, 'expired');
    const repostPath = `/posts/${friendPost.id}/repost`;
    const staleRepost = await inFlight(who, 'k-stale-r', '/posts/:id/repost', repostPath, null, 'expired');
    for (const stale of [stalePost, staleRepost]) {
      // A retry took the key over while the stale owner was still working.
      const taken = await takeOverKey(env.app.db, { ...stale, owner: randomUUID() }, stale.owner, 60_000);
      expect(taken).toEqual({ resource: undefined });
    }

    await expect(commitPost(env.app, who.id, body, stalePost)).rejects.toMatchObject({
      code: 'conflict',
    });
    await expect(commitRepost(env.app, who.id, friendPost.id, staleRepost)).rejects.toMatchObject({
      code: 'conflict',
    });
    expect(await postsBy(who)).toEqual([]);
    const reposts = await env.app.db
      .selectFrom('reposts')
      .select('id')
      .where('reposter_id', '=', who.id)
      .execute();
    expect(reposts).toEqual([]);
    const rows = await env.app.db
      .selectFrom('idempotency_keys')
      .select(['resource_kind', 'resource_id'])
      .where('account_id', '=', who.id)
      .execute();
    expect(rows).toEqual([
      { resource_kind: null, resource_id: null },
      { resource_kind: null, resource_id: null },
    ]);
    expect(await ledgerOf(who)).toBe(3_000_000n);
    expect(await chainOf(who)).toBe(3_000_000n);
  });

  test('a 5xx after a commit whose answer was lost keeps the key and a retry answers from it; a 5xx with nothing committed frees it', async () => {
    const who = await payer('lost_answer', 3_000_000n);
    const body = { type: 'post', content: 'answer lost' };
    const owner = await inFlight(who, 'k-lost', '/posts', '/posts', body, 'alive');
    const created = await commitPost(env.app, who.id, body, owner);
    await releaseAfterFailure(env.app.db, owner); // e.g. the connection broke after Postgres committed

    const retry = await keyed(who, '/posts', 'k-lost', body);
    expect(retry.status).toBe(201);
    expect(((await retry.json()) as { id: string }).id).toBe(created.id);

    const other = { type: 'post', content: 'never committed' };
    const uncommitted = await inFlight(who, 'k-free', '/posts', '/posts', other, 'alive');
    await releaseAfterFailure(env.app.db, uncommitted);
    const freed = await env.app.db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('account_id', '=', who.id)
      .where('key', '=', 'k-free')
      .execute();
    expect(freed).toEqual([]);
    expect(await postsBy(who)).toEqual([{ id: created.id }]);
    expect(await ledgerOf(who)).toBe(2_000_000n);
  });

  test('a live owner blocked past its first lease keeps renewing it: a repeat waits for its answer, one charge', async () => {
    // WRITE_TIMEOUT_MS 300: a lease of 5.3 s, renewed every 1.77 s.
    const short = await buildServer({ ...env.app, writeTimeoutMs: 300 });
    const shortBase = await short.listen({ port: 0, host: '127.0.0.1' });
    const who = await payer('slow_owner', 3_000_000n);
    const body = { type: 'post', content: 'slow but alive' };
    const locker = new pg.Client({ connectionString: env.config.DATABASE_URL });
    await locker.connect();
    try {
      // The payer's balance row is held: the owner's commit waits inside its statement.
      await locker.query('BEGIN');
      await locker.query('SELECT id FROM ledger_accounts WHERE account_id = $1 FOR UPDATE', [who.id]);
      const first = keyed(who, '/posts', 'k-slow', body, shortBase);
      await sleep(6_500);
      const row = await env.app.db
        .selectFrom('idempotency_keys')
        .select([sql<boolean>`lease_until > now()`.as('alive')])
        .where('account_id', '=', who.id)
        .executeTakeFirstOrThrow();
      expect(row.alive).toBe(true);
      const repeat = keyed(who, '/posts', 'k-slow', body, shortBase);
      await sleep(500);
      await locker.query('ROLLBACK');
      const [a, b] = await Promise.all([first, repeat]);
      expect(a.status).toBeLessThan(300);
      expect(b.status).toBe(a.status);
      expect(b.headers.get('idempotent-replayed')).toBe('true');
      expect(await b.text()).toBe(await a.text());
    } finally {
      await locker.end();
      await short.close();
    }
    expect(await postsBy(who)).toHaveLength(1);
    expect(await ledgerOf(who)).toBe(2_000_000n);
    expect(await chainOf(who)).toBe(2_000_000n);
  });
});
