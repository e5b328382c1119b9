import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import type { Scope } from '../src/domain/auth/api-key.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { processorsFor } from '../workers/processors.js';
import type { RunningRole } from '../workers/role.js';
import { startWorkerRole } from '../workers/worker.role.js';
import { settledMoney } from './support/balances.js';
import { depositUsdc } from './support/deposit.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let server: FastifyInstance;
let worker: RunningRole;
let base: string;

beforeAll(async () => {
  env = await openTestEnv({ RATE_LIMIT_MULTIPLIER: '0' }, { chain: true });
  await env.app.bootstrapChain();
  server = await buildServer(env.app);
  base = await server.listen({ port: 0, host: '127.0.0.1' });
  worker = await startWorkerRole(env.app, processorsFor(env.app));
});
afterAll(async () => {
  await worker?.stop();
  await server?.close();
  await env?.close();
});

async function funded(handle: string, micro: bigint, scopes?: Scope[]) {
  const account = await createAccount(env.app, { handle });
  const { key } = await createApiKey(env.app.apiKeys, account.id, scopes);
  await depositUsdc(env.app, await env.app.bootstrapChain(), account, micro);
  return { account, key };
}

async function gql(key: string, query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as {
    data?: any;
    errors?: Array<{ message: string; extensions: { code: string } }>;
  };
}

describe('GraphQL write mutations', () => {
  test('createPost, repost, like and unlike share the REST services and payment path', async () => {
    const author = await funded('gql_author', 2_000_000n);
    const fan = await funded('gql_fan', 2_000_000n);
    const created = await gql(
      author.key,
      'mutation ($input: CreatePostInput!) { createPost(input: $input) { id type content costUsdMicro swapTx status } }',
      { input: { content: 'from GraphQL', type: 'POST' } },
    );
    expect(created.errors).toBeUndefined();
    const post = created.data.createPost;
    expect(post).toMatchObject({
      type: 'POST',
      content: 'from GraphQL',
      costUsdMicro: '1000000',
    });
    // Executed by the cluster; confirmation may or may not have followed by the time it answered.
    expect(['SENT', 'CONFIRMED']).toContain(post.status);
    const [status] = await env.app.rpc.getSignatureStatuses([post.swapTx]);
    expect(status?.err).toBeNull();

    const repost = await gql(
      fan.key,
      'mutation ($id: ID!) { repost(postId: $id) { repostOf costUsdMicro status } }',
      {
        id: post.id,
      },
    );
    expect(repost.data.repost).toMatchObject({ repostOf: post.id, costUsdMicro: '1000000' });
    expect(['SENT', 'CONFIRMED']).toContain(repost.data.repost.status);
    expect((await settledMoney(env.app, author.account.id)).availableMicro).toBe(1_500_000n);

    const liked = await gql(fan.key, 'mutation ($id: ID!) { like(postId: $id) { liked likeCount } }', {
      id: post.id,
    });
    expect(liked.data.like).toEqual({ liked: true, likeCount: 1 });
    const unliked = await gql(fan.key, 'mutation ($id: ID!) { unlike(postId: $id) { liked likeCount } }', {
      id: post.id,
    });
    expect(unliked.data.unlike).toEqual({ liked: false, likeCount: 0 });
  });

  test('scopes and money errors read as on REST', async () => {
    const reader = await funded('gql_reader', 1n, ['read']);
    const refused = await gql(
      reader.key,
      'mutation { createPost(input: { content: "x", type: POST }) { id } }',
    );
    expect(refused.errors?.[0]).toMatchObject({
      message: "API key lacks the 'post' scope",
      extensions: { code: 'FORBIDDEN' },
    });
    const poor = await funded('gql_poor', 1n);
    const broke = await gql(poor.key, 'mutation { createPost(input: { content: "x", type: POST }) { id } }');
    expect(broke.errors?.[0]?.extensions.code).toBe('INSUFFICIENT_FUNDS');
  });

  test('send moves USDC like POST /send: exact amounts, memo, refusals as on REST', async () => {
    const alice = await funded('gql_alice', 3_000_000n);
    const bob = await funded('gql_bob', 1n);
    const sent = await gql(
      alice.key,
      'mutation ($input: SendInput!) { send(input: $input) { id from to amountUsdMicro memo swapTx status createdAt } }',
      { input: { toHandle: 'gql_bob', amountUsd: '1.25', memo: 'coffee' } },
    );
    expect(sent.errors).toBeUndefined();
    expect(sent.data.send).toMatchObject({
      from: 'gql_alice',
      to: 'gql_bob',
      amountUsdMicro: '1250000',
      memo: 'coffee',
    });
    expect(['SENT', 'CONFIRMED']).toContain(sent.data.send.status);
    expect(await settledMoney(env.app, bob.account.id)).toMatchObject({
      availableMicro: 1_250_001n,
      pendingMicro: 0n,
    });
    expect((await settledMoney(env.app, alice.account.id)).availableMicro).toBe(1_750_000n);

    const tooMuch = await gql(alice.key, 'mutation ($input: SendInput!) { send(input: $input) { id } }', {
      input: { toHandle: 'gql_bob', amountUsd: '5' },
    });
    expect(tooMuch.errors?.[0]?.extensions.code).toBe('INSUFFICIENT_FUNDS');
    const toSelf = await gql(alice.key, 'mutation ($input: SendInput!) { send(input: $input) { id } }', {
      input: { toHandle: 'gql_alice', amountUsd: '1' },
    });
    expect(toSelf.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    const nobody = await gql(alice.key, 'mutation ($input: SendInput!) { send(input: $input) { id } }', {
      input: { toHandle: 'gql_nobody', amountUsd: '1' },
    });
    expect(nobody.errors?.[0]?.extensions.code).toBe('NOT_FOUND');
    expect((await settledMoney(env.app, alice.account.id)).availableMicro).toBe(1_750_000n);
  });
});
