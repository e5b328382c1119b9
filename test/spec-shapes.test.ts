import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectShape } from './support/expect-shape.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * Every endpoint of the write path against the spec (../shared/spec/social-posting-api.md), in one
 * place: exact field sets (no field missing, none added) and the JSON type of each field. Our own
 * additions the spec leaves open (the like body, 202's `status`, a history entry's chain state) are
 * named as such.
 */
let h: ServiceHarness;
let alice: Member;
let bob: Member;

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  alice = await h.member('shape_alice', 10_000_000n);
  bob = await h.member('shape_bob', 10_000_000n);
});
afterAll(async () => {
  await h?.close();
});

const CREATED_POST = {
  id: 'string',
  content: 'string',
  type: 'string',
  author: 'object',
  cost_usd_micro: 'integer',
  swap_tx: 'signature',
  created_at: 'iso8601',
} as const;

describe('the write path answers exactly as the spec', () => {
  test('POST /posts (post, reply, quote), /repost, /like, /send and GET /me/transactions', async () => {
    const created = await h.call(alice, 'POST', '/posts', { content: 'shapes', type: 'post' });
    expect(created.status).toBe(201);
    const post = (await created.json()) as Record<string, any>;
    expectShape(post, CREATED_POST);
    expectShape(post.author, { handle: 'string', wallet_address: 'string' });
    expect(post).toMatchObject({
      type: 'post',
      cost_usd_micro: 1_000_000,
      author: { handle: 'shape_alice' },
    });

    for (const [type, ref] of [
      ['reply', 'parent_id'],
      ['quote', 'quoted_post_id'],
    ] as const) {
      const response = await h.call(bob, 'POST', '/posts', { content: type, type, [ref]: post.id });
      expect(response.status).toBe(201);
      const body = await response.json();
      expectShape(body, CREATED_POST);
      expect(body).toMatchObject({ type });
    }

    const reposted = await h.call(bob, 'POST', `/posts/${post.id}/repost`);
    expect(reposted.status).toBe(201);
    const repost = (await reposted.json()) as Record<string, unknown>;
    expectShape(repost, {
      id: 'string',
      repost_of: 'string',
      cost_usd_micro: 'integer',
      swap_tx: 'signature',
    });
    expect(repost.repost_of).toBe(post.id);

    // The spec shows no like body; ours (documented) is {liked, like_count}.
    for (const [method, liked] of [
      ['POST', true],
      ['DELETE', false],
    ] as const) {
      const response = await h.call(bob, method, `/posts/${post.id}/like`);
      expect(response.status).toBe(200);
      const body = await response.json();
      expectShape(body, { liked: 'boolean', like_count: 'integer' });
      expect(body).toMatchObject({ liked });
    }

    const sent = await h.call(alice, 'POST', '/send', {
      to_handle: 'shape_bob',
      amount_usd: 0.5,
      memo: 'hi',
    });
    expect(sent.status).toBe(201);
    const send = (await sent.json()) as Record<string, unknown>;
    expectShape(send, {
      id: 'string',
      from: 'string',
      to: 'string',
      amount_usd: 'number',
      swap_tx: 'signature',
      created_at: 'iso8601',
    });
    expect(send).toMatchObject({ from: 'shape_alice', to: 'shape_bob', amount_usd: 0.5 });

    const listed = await h.call(alice, 'GET', '/me/transactions?limit=2');
    expect(listed.status).toBe(200);
    const page = (await listed.json()) as Record<string, any>;
    expectShape(page, { transactions: 'array', has_more: 'boolean', next_cursor: ['string', 'null'] });
    expect(page.has_more).toBe(true);
    const rest = (await (
      await h.call(
        alice,
        'GET',
        `/me/transactions?limit=50&cursor=${encodeURIComponent(page.next_cursor as string)}`,
      )
    ).json()) as Record<string, any>;
    const all = [...(page.transactions as unknown[]), ...(rest.transactions as unknown[])];
    for (const entry of all) {
      expectShape(entry, {
        id: 'string',
        type: 'string',
        amount_usd: 'number',
        description: 'string',
        swap_tx: 'signature',
        related_post_id: ['string', 'null'],
        counterparty: ['string', 'null'],
        created_at: 'iso8601',
        // Ours, documented (no field of the spec's Transaction has these names): its chain state.
        status: 'string',
        slot: ['integer', 'null'],
        confirmed_at: ['iso8601', 'null'],
        finalized_at: ['iso8601', 'null'],
      });
    }
    // Alice: her post, two earnings (reply and quote; the repost earns too), and her send.
    const types = all.map((entry) => (entry as { type: string }).type);
    expect(types.filter((t) => t === 'post')).toHaveLength(1);
    expect(types.filter((t) => t === 'earn')).toHaveLength(3);
    expect(types.filter((t) => t === 'send')).toHaveLength(1);
    expect(all.find((e) => (e as { type: string }).type === 'send')).toMatchObject({
      amount_usd: -0.5,
      counterparty: 'shape_bob',
      related_post_id: null,
    });
  });

  test('GET /me: the spec profile plus our documented native_tokens (base units, a string)', async () => {
    const response = await h.call(alice, 'GET', '/me');
    expect(response.status).toBe(200);
    const me = await response.json();
    expectShape(me, {
      handle: 'string',
      display_name: 'string',
      avatar_url: 'string',
      bio: 'string',
      wallet_address: 'string',
      earned_usdc: 'number',
      total_earned: 'number',
      total_spent: 'number',
      native_tokens: 'string',
    });
    expect(me.native_tokens).toMatch(/^\d+$/);
  });

  test('the money errors: 402 insufficient_balance with balance_usd and required_usd; others {error, message}', async () => {
    const poor = await h.member('shape_poor', 400_000n);
    const refused = await h.call(poor, 'POST', '/posts', { content: 'too dear', type: 'post' });
    expect(refused.status).toBe(402);
    const body = await refused.json();
    expectShape(body, { error: 'string', message: 'string', balance_usd: 'number', required_usd: 'number' });
    expect(body).toMatchObject({ error: 'insufficient_balance', balance_usd: 0.4, required_usd: 1 });

    for (const [path, payload, status] of [
      ['/posts', { content: '   ', type: 'post' }, 400],
      ['/posts', { content: 'x', type: 'reply', parent_id: '00000000-0000-4000-8000-000000000000' }, 404],
      ['/send', { to_handle: 'shape_nobody', amount_usd: 1 }, 404],
      ['/send', { to_handle: 'shape_poor', amount_usd: 0.1 }, 400],
    ] as const) {
      const response = await h.call(poor, 'POST', path, payload);
      expect(response.status, `${path} ${JSON.stringify(payload)}`).toBe(status);
      expectShape(await response.json(), { error: 'string', message: 'string' });
    }
  });
});
