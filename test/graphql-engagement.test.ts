import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { settledMoney } from './support/balances.js';
import { openServiceHarness, type ServiceHarness } from './support/service-harness.js';

let h: ServiceHarness;

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
});
afterAll(async () => {
  await h?.close();
});

describe('GraphQL write mutations', () => {
  test('createPost, repost, like and unlike share the REST services and payment path', async () => {
    const author = await h.member('gql_author', 2_000_000n);
    const fan = await h.member('gql_fan', 2_000_000n);
    const created = await h.gql(
      author,
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
    const [status] = await h.env.app.rpc.getSignatureStatuses([post.swapTx]);
    expect(status?.err).toBeNull();

    const repost = await h.gql(
      fan,
      'mutation ($id: ID!) { repost(postId: $id) { repostOf costUsdMicro status } }',
      {
        id: post.id,
      },
    );
    expect(repost.data.repost).toMatchObject({ repostOf: post.id, costUsdMicro: '1000000' });
    expect(['SENT', 'CONFIRMED']).toContain(repost.data.repost.status);
    expect((await settledMoney(h.env.app, author.account.id)).availableMicro).toBe(1_500_000n);

    const liked = await h.gql(fan, 'mutation ($id: ID!) { like(postId: $id) { liked likeCount } }', {
      id: post.id,
    });
    expect(liked.data.like).toEqual({ liked: true, likeCount: 1 });
    const unliked = await h.gql(fan, 'mutation ($id: ID!) { unlike(postId: $id) { liked likeCount } }', {
      id: post.id,
    });
    expect(unliked.data.unlike).toEqual({ liked: false, likeCount: 0 });
  });

  test('scopes and money errors read as on REST', async () => {
    const reader = await h.member('gql_reader', 1n, ['read']);
    const refused = await h.gql(
      reader,
      'mutation { createPost(input: { content: "x", type: POST }) { id } }',
    );
    expect(refused.errors?.[0]).toMatchObject({
      message: "API key lacks the 'post' scope",
      extensions: { code: 'FORBIDDEN' },
    });
    const poor = await h.member('gql_poor', 1n);
    const broke = await h.gql(poor, 'mutation { createPost(input: { content: "x", type: POST }) { id } }');
    expect(broke.errors?.[0]?.extensions.code).toBe('INSUFFICIENT_FUNDS');
  });

  test('send moves USDC like POST /send: exact amounts, memo, refusals as on REST', async () => {
    const alice = await h.member('gql_alice', 3_000_000n);
    const bob = await h.member('gql_bob', 1n);
    const sent = await h.gql(
      alice,
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
    expect(await settledMoney(h.env.app, bob.account.id)).toMatchObject({
      availableMicro: 1_250_001n,
      pendingMicro: 0n,
    });
    expect((await settledMoney(h.env.app, alice.account.id)).availableMicro).toBe(1_750_000n);

    const tooMuch = await h.gql(alice, 'mutation ($input: SendInput!) { send(input: $input) { id } }', {
      input: { toHandle: 'gql_bob', amountUsd: '5' },
    });
    expect(tooMuch.errors?.[0]?.extensions.code).toBe('INSUFFICIENT_FUNDS');
    const toSelf = await h.gql(alice, 'mutation ($input: SendInput!) { send(input: $input) { id } }', {
      input: { toHandle: 'gql_alice', amountUsd: '1' },
    });
    expect(toSelf.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    const nobody = await h.gql(alice, 'mutation ($input: SendInput!) { send(input: $input) { id } }', {
      input: { toHandle: 'gql_nobody', amountUsd: '1' },
    });
    expect(nobody.errors?.[0]?.extensions.code).toBe('NOT_FOUND');
    expect((await settledMoney(h.env.app, alice.account.id)).availableMicro).toBe(1_750_000n);
  });
});
