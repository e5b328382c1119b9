import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

let h: ServiceHarness;

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
});
afterAll(async () => {
  await h?.close();
});

async function post(who: Member, body: unknown): Promise<{ id: string; swap_tx: string }> {
  const response = await h.call(who, 'POST', '/posts', body);
  expect(response.status).toBe(201);
  return (await response.json()) as { id: string; swap_tx: string };
}

async function history(who: Member, query = '') {
  const response = await h.call(who, 'GET', `/me/transactions${query}`);
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** Ids of a REST page's transactions or of a GraphQL connection's nodes. */
const idsOf = (items: unknown): string[] => (items as Array<{ id: string }>).map((item) => item.id);
const nodesOf = (connection: unknown) =>
  (connection as { edges: Array<{ node: Record<string, unknown> & { id: string } }> }).edges.map(
    (edge) => edge.node,
  );

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('GET /api/v1/me/transactions', () => {
  let alice: Member;
  let bob: Member;
  let alicePost: { id: string; swap_tx: string };
  let bobReply: { id: string; swap_tx: string };

  beforeAll(async () => {
    alice = await h.member('alice_tx', 3_000_000n);
    bob = await h.member('bob_tx', 2_000_000n);
    alicePost = await post(alice, { type: 'post', content: 'history, paid' });
    bobReply = await post(bob, { type: 'reply', content: 'noted', parent_id: alicePost.id });
  }, 120_000);

  test('an account with no ledger account has an empty history', async () => {
    const carol = await h.member('carol_tx', 0n);
    expect(await history(carol)).toEqual({ status: 200, body: { transactions: [], has_more: false } });
  });

  test('after a deposit, a post and a reply to it: earn, post, deposit, newest first, exact fields', async () => {
    const { status, body } = await history(alice);
    expect(status).toBe(200);
    expect(body).toEqual({
      has_more: false,
      transactions: [
        {
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          type: 'earn',
          amount_usd: 0.5,
          description: 'Earned from a reply to your post',
          swap_tx: bobReply.swap_tx,
          related_post_id: bobReply.id,
          counterparty: null,
          created_at: expect.stringMatching(ISO),
        },
        {
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          type: 'post',
          amount_usd: -1,
          description: 'Post',
          swap_tx: alicePost.swap_tx,
          related_post_id: alicePost.id,
          counterparty: null,
          created_at: expect.stringMatching(ISO),
        },
        {
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          type: 'deposit',
          amount_usd: 3,
          description: 'Deposit',
          swap_tx: alice.depositTx,
          related_post_id: null,
          counterparty: null,
          created_at: expect.stringMatching(ISO),
        },
      ],
    });
    const times = (body.transactions as Array<{ created_at: string }>).map((t) => t.created_at);
    expect([...times].sort().reverse()).toEqual(times);
    // The id is the ledger movement: the post's movement for the spend.
    const movement = await h.env.app.db
      .selectFrom('posts')
      .select('movement_id')
      .where('id', '=', alicePost.id)
      .executeTakeFirstOrThrow();
    expect(body.transactions[1].id).toBe(movement.movement_id);
  });

  test('the replier sees the reply as a spend', async () => {
    const { body } = await history(bob);
    expect(body.transactions[0]).toMatchObject({
      type: 'post',
      amount_usd: -1,
      description: 'Reply to a post',
      swap_tx: bobReply.swap_tx,
      related_post_id: bobReply.id,
    });
  });

  test('limit=1 walks every item once, with next_cursor only while has_more', async () => {
    const { body: all } = await history(alice);
    const seen: string[] = [];
    let query = '?limit=1';
    for (let page = 0; page < 10; page++) {
      const { status, body } = await history(alice, query);
      expect(status).toBe(200);
      expect(body.transactions).toHaveLength(1);
      seen.push(body.transactions[0].id);
      if (!body.has_more) {
        expect(body).not.toHaveProperty('next_cursor');
        break;
      }
      expect(body.next_cursor).toEqual(expect.any(String));
      query = `?limit=1&cursor=${encodeURIComponent(body.next_cursor)}`;
    }
    expect(seen).toEqual(idsOf(all.transactions));
  });

  test('a tampered, garbled or foreign cursor is 400 invalid_request', async () => {
    const { body } = await history(alice, '?limit=1');
    const cursor: string = body.next_cursor;
    const flip = (text: string, at: number) =>
      `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
    for (const [who, bad] of [
      [alice, flip(cursor, 3)],
      [alice, flip(cursor, cursor.length - 1)],
      [alice, 'garbage'],
      [alice, ''],
      [alice, `${cursor}.x`],
      [bob, cursor], // signed for alice's account only
    ] as const) {
      const response = await history(who, `?cursor=${encodeURIComponent(bad)}`);
      expect(response).toEqual({
        status: 400,
        body: { error: 'invalid_request', message: expect.stringMatching(/^cursor is not valid/) },
      });
    }
  });

  test.each(['51', '0', '-1', '1.5', 'ten'])('limit=%s is 400 naming the rule', async (limit) => {
    expect(await history(alice, `?limit=${limit}`)).toEqual({
      status: 400,
      body: { error: 'invalid_request', message: 'limit must be an integer from 1 to 50 (default 20)' },
    });
  });

  test('without an API key: 401', async () => {
    const response = await fetch(`${h.base}/api/v1/me/transactions`);
    expect(response.status).toBe(401);
  });

  test('GraphQL viewer.transactions returns the same entries, amounts as exact decimal strings', async () => {
    const { body: rest } = await history(alice);
    const query = `query ($first: Int, $after: String) {
      viewer { transactions(first: $first, after: $after) {
        edges { cursor node { id type amountUsd description swapTx relatedPostId counterparty createdAt } }
        pageInfo { hasNextPage endCursor }
      } }
    }`;
    const { data, errors } = await h.gql(alice, query, { first: 10 });
    expect(errors).toBeUndefined();
    const nodes = nodesOf(data.viewer.transactions);
    expect(idsOf(nodes)).toEqual(idsOf(rest.transactions));
    expect(nodes.map((n) => [n.type, n.amountUsd])).toEqual([
      ['EARN', '0.5'],
      ['POST', '-1'],
      ['DEPOSIT', '3'],
    ]);
    expect(nodes[0]).toMatchObject({
      swapTx: bobReply.swap_tx,
      relatedPostId: bobReply.id,
      counterparty: null,
    });
    expect(data.viewer.transactions.pageInfo.hasNextPage).toBe(false);

    const first = await h.gql(alice, query, { first: 2 });
    expect(first.data.viewer.transactions.pageInfo.hasNextPage).toBe(true);
    const second = await h.gql(alice, query, {
      first: 2,
      after: first.data.viewer.transactions.pageInfo.endCursor,
    });
    expect(idsOf(nodesOf(second.data.viewer.transactions))).toEqual([nodes[2]!.id]);

    const tooMany = await h.gql(alice, query, { first: 51 });
    expect(tooMany.errors?.[0]).toMatchObject({
      message: 'first must be an integer from 1 to 50 (default 20)',
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });
});
