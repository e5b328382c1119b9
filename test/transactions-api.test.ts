import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { recordOutboxResigned } from '../src/adapters/postgres/outbox.repository.js';
import { commitPost } from '../src/app/write-path/create-post.js';
import { resignPayment, walletSigner } from '../src/app/write-path/payment-transaction.js';
import { settlePayment } from '../src/app/write-path/settle-payment.js';
import { drainOnChain } from './support/chain-tampering.js';
import { depositNative } from './support/deposit.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';
import { until } from './support/until.js';

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

/** alice_<suffix> posts and bob_<suffix> replies to it, each funded with its amount. */
async function postAndReply(
  suffix: string,
  [aliceMicro, bobMicro]: [bigint, bigint],
  [content, reply]: [string, string],
) {
  const alice = await h.member(`alice_${suffix}`, aliceMicro);
  const bob = await h.member(`bob_${suffix}`, bobMicro);
  const alicePost = await post(alice, { type: 'post', content });
  const bobReply = await post(bob, { type: 'reply', content: reply, parent_id: alicePost.id });
  return { alice, bob, alicePost, bobReply };
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

/** The state of a payment that has run without error, wherever it has got by now. */
const UNDER_WAY = {
  status: expect.toBeOneOf(['pending', 'confirmed', 'finalized']),
  slot: expect.toBeOneOf([expect.any(Number), null]),
  confirmed_at: expect.toBeOneOf([expect.stringMatching(ISO), null]),
  finalized_at: expect.toBeOneOf([expect.stringMatching(ISO), null]),
};

describe('GET /api/v1/me/transactions', () => {
  let alice: Member;
  let bob: Member;
  let alicePost: { id: string; swap_tx: string };
  let bobReply: { id: string; swap_tx: string };

  beforeAll(async () => {
    ({ alice, bob, alicePost, bobReply } = await postAndReply(
      'tx',
      [3_000_000n, 2_000_000n],
      ['history, paid', 'noted'],
    ));
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
          ...UNDER_WAY,
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
          ...UNDER_WAY,
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
          // Credited once seen confirmed, not followed further (no outbox row).
          status: 'confirmed',
          slot: null,
          confirmed_at: expect.stringMatching(ISO),
          finalized_at: null,
        },
      ],
    });
    const times = (body.transactions as Array<{ created_at: string }>).map((t) => t.created_at);
    expect([...times].sort().reverse()).toEqual(times);
    expect(body.transactions[2].confirmed_at).toBe(body.transactions[2].created_at);
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

type Entry = Record<string, any>;

async function payment(who: Member, swapTx: string) {
  const response = await h.call(who, 'GET', `/payments/${encodeURIComponent(swapTx)}`);
  return { status: response.status, body: (await response.json()) as Entry };
}

const TX_FIELDS = 'id type swapTx relatedPostId counterparty createdAt status slot confirmedAt finalizedAt';

/** A REST history entry as GraphQL's Transaction shows it (the fields of TX_FIELDS). */
const graphqlOf = (entry: Entry) => ({
  id: entry.id,
  type: (entry.type as string).toUpperCase(),
  swapTx: entry.swap_tx,
  relatedPostId: entry.related_post_id,
  counterparty: entry.counterparty,
  createdAt: entry.created_at,
  status: entry.status === null ? null : (entry.status as string).toUpperCase(),
  slot: entry.slot,
  confirmedAt: entry.confirmed_at,
  finalizedAt: entry.finalized_at,
});

const entryOf = async (who: Member, swapTx: string): Promise<Entry> => {
  const found = ((await history(who, '?limit=50')).body.transactions as Entry[]).find(
    (t) => t.swap_tx === swapTx && t.type !== 'refund',
  );
  expect(found, `an entry paid by ${swapTx}`).toBeDefined();
  return found!;
};

describe('the state of every money move (status, slot, confirmed_at, finalized_at)', () => {
  let alice: Member;
  let bob: Member;
  let alicePost: { id: string; swap_tx: string };
  let bobReply: { id: string; swap_tx: string };

  beforeAll(async () => {
    ({ alice, bob, alicePost, bobReply } = await postAndReply(
      'state',
      [5_000_000n, 5_000_000n],
      ['followed to finality', 'me too'],
    ));
  }, 120_000);

  test('a paid post is followed to finalized: the history, GET /payments/{swap_tx} and GraphQL show it with its slot and both times', async () => {
    const seen: string[] = [];
    const entry = await until(
      'the post finalized in the history',
      async () => {
        const item = await entryOf(alice, alicePost.swap_tx);
        if (seen.at(-1) !== item.status) seen.push(item.status as string);
        return item;
      },
      (item) => item.status === 'finalized',
    );
    // Never backwards: each state in order, some perhaps passed between two looks.
    expect(['pending', 'confirmed', 'finalized'].filter((s) => seen.includes(s))).toEqual(seen);
    expect(entry).toMatchObject({ type: 'post', amount_usd: -1, related_post_id: alicePost.id });
    expect(Number.isSafeInteger(entry.slot)).toBe(true);
    expect(entry.confirmed_at).toMatch(ISO);
    expect(entry.finalized_at).toMatch(ISO);
    expect(Date.parse(entry.confirmed_at as string)).toBeGreaterThanOrEqual(
      Date.parse(entry.created_at as string),
    );
    expect(Date.parse(entry.finalized_at as string)).toBeGreaterThanOrEqual(
      Date.parse(entry.confirmed_at as string),
    );
    // The chain says the same, at that slot.
    const [onChain] = await h.env.app.rpc.getSignatureStatuses([alicePost.swap_tx], {
      searchTransactionHistory: true,
    });
    expect(onChain).toMatchObject({ confirmationStatus: 'finalized', slot: entry.slot, err: null });

    expect(await payment(alice, alicePost.swap_tx)).toEqual({ status: 200, body: entry });

    const { data, errors } = await h.gql(
      alice,
      `query ($s: String!) {
        payment(swapTx: $s) { ${TX_FIELDS} }
        viewer { transactions(first: 10) { edges { node { ${TX_FIELDS} } } } }
      }`,
      { s: alicePost.swap_tx },
    );
    expect(errors).toBeUndefined();
    expect(data.payment).toEqual(graphqlOf(entry));
    expect(data.payment.status).toBe('FINALIZED');
    expect(nodesOf(data.viewer.transactions).find((n) => n.swapTx === alicePost.swap_tx)).toEqual(
      graphqlOf(entry),
    );
  });

  test('an earning shows the state of the payment that paid it: GET /payments/{swap_tx} answers the author the earning, the replier the spend', async () => {
    const [earning, spend] = await until(
      'the reply finalized for both',
      async () => [
        (await payment(alice, bobReply.swap_tx)).body,
        (await payment(bob, bobReply.swap_tx)).body,
      ],
      (both) => both.every((entry) => entry.status === 'finalized'),
    );
    expect(earning).toMatchObject({
      type: 'earn',
      amount_usd: 0.5,
      description: 'Earned from a reply to your post',
      swap_tx: bobReply.swap_tx,
      related_post_id: bobReply.id,
      counterparty: null,
    });
    expect(spend).toMatchObject({
      type: 'post',
      amount_usd: -1,
      description: 'Reply to a post',
      swap_tx: bobReply.swap_tx,
      related_post_id: bobReply.id,
    });
    for (const field of ['status', 'slot', 'confirmed_at', 'finalized_at']) {
      expect(earning[field], field).toEqual(spend[field]);
    }
    expect(await entryOf(alice, bobReply.swap_tx)).toEqual(earning);
    expect(await entryOf(bob, bobReply.swap_tx)).toEqual(spend);
  });

  test('another account’s payment, an unknown signature and a malformed one are 404 JSON; GraphQL payment answers null', async () => {
    const stranger = await h.member('stranger_state', 0n);
    const unknown = '1'.repeat(88);
    for (const [who, swapTx] of [
      [stranger, alicePost.swap_tx],
      [bob, alicePost.swap_tx], // bob paid nothing of alice's own post
      [bob, alice.depositTx!],
      [alice, unknown],
      [alice, 'not-a-signature'],
      [alice, `${alicePost.swap_tx}1`],
      [alice, "' OR 1=1 --"],
    ] as const) {
      expect(await payment(who, swapTx), `${who.account.handle} ${swapTx}`).toEqual({
        status: 404,
        body: { error: 'not_found', message: 'No payment of this account has that swap_tx' },
      });
      const { data, errors } = await h.gql(who, 'query ($s: String!) { payment(swapTx: $s) { id } }', {
        s: swapTx,
      });
      expect(errors).toBeUndefined();
      expect(data).toEqual({ payment: null });
    }
  });

  test('GET /payments/{swap_tx} needs the read scope and an API key', async () => {
    const writer = await h.member('writer_state', 0n, ['post']);
    const refused = await payment(writer, alicePost.swap_tx);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: 'forbidden' });
    expect((await fetch(`${h.base}/api/v1/payments/${alicePost.swap_tx}`)).status).toBe(401);
  });

  test('a payment that failed on chain shows failed, beside its refund, in the history, GET /payments/{swap_tx} and GraphQL', async () => {
    const app = h.env.app;
    const dave = await h.member('dave_state', 3_000_000n);
    const doomed = await commitPost(app, dave.account.id, { type: 'post', content: 'doomed post' });
    // The wallet is emptied behind the ledger's back: the post's transfer fails on chain.
    await drainOnChain(app, h.platform, dave.account, 3_000_000n);
    expect(await settlePayment(app, doomed.chainTransactionId)).toBe('failed');

    const { body } = await history(dave);
    const paidByIt = (body.transactions as Entry[]).filter((t) => t.swap_tx === doomed.swapTx);
    const failed = { status: 'failed', confirmed_at: null, finalized_at: null };
    expect(paidByIt).toMatchObject([
      { type: 'refund', amount_usd: 1, description: 'Refund of a failed payment', ...failed },
      { type: 'post', amount_usd: -1, related_post_id: doomed.id, ...failed },
    ]);
    expect(await payment(dave, doomed.swapTx)).toEqual({ status: 200, body: paidByIt[1] });
    const { data } = await h.gql(dave, `query ($s: String!) { payment(swapTx: $s) { ${TX_FIELDS} } }`, {
      s: doomed.swapTx,
    });
    expect(data.payment).toEqual(graphqlOf(paidByIt[1]!));
  });

  test('a signature replaced by a re-sign finds the payment, which answers its current swap_tx', async () => {
    const app = h.env.app;
    const fay = await h.member('fay_state', 2_000_000n);
    const paid = await commitPost(app, fay.account.id, { type: 'post', content: 'signed twice' });
    const row = await app.db
      .selectFrom('chain_transactions')
      .select(['wire', 'signature'])
      .where('id', '=', paid.chainTransactionId)
      .executeTakeFirstOrThrow();
    // What the worker does when a blockhash expired unseen: the same message under a fresh one.
    const signers = [h.platform.signers.fee_payer, await walletSigner(app.db, app.keystore, fay.account.id)];
    let fresh = await resignPayment(app.rpc, row.wire, signers);
    while (fresh.signature === row.signature) {
      await sleep(150);
      fresh = await resignPayment(app.rpc, row.wire, signers);
    }
    await recordOutboxResigned(app.db, paid.chainTransactionId, row.signature, fresh);
    expect(['confirmed', 'finalized']).toContain(await settlePayment(app, paid.chainTransactionId));

    const byOld = await payment(fay, paid.swapTx);
    expect(byOld.status).toBe(200);
    expect(byOld.body).toMatchObject({
      type: 'post',
      related_post_id: paid.id,
      swap_tx: fresh.signature,
      status: expect.stringMatching(/^(confirmed|finalized)$/),
    });
    const byNew = await payment(fay, fresh.signature);
    expect(byNew.body.id).toBe(byOld.body.id);
    const { data } = await h.gql(fay, 'query ($s: String!) { payment(swapTx: $s) { id swapTx } }', {
      s: paid.swapTx,
    });
    expect(data.payment).toEqual({ id: byOld.body.id, swapTx: fresh.signature });
    expect((await payment(bob, paid.swapTx)).status).toBe(404);
  });

  test('every kind of money move shows its state and ends finalized (deposits too), each one found by GET /payments/{swap_tx}', async () => {
    const gus = await h.member('gus_state', 10_000_000n);
    const hal = await h.member('hal_state', 10_000_000n);
    const original = await post(gus, { type: 'post', content: 'every kind' });
    await post(hal, { type: 'reply', content: 'a reply', parent_id: original.id });
    await post(hal, { type: 'quote', content: 'a quote', quoted_post_id: original.id });
    expect((await h.call(hal, 'POST', `/posts/${original.id}/repost`)).status).toBe(201);
    const sent = await h.call(gus, 'POST', '/send', { to_handle: 'hal_state', amount_usd: 1.25 });
    expect(sent.status).toBe(201);
    const TOKEN = 10n ** 9n;
    await depositNative(h.env.app, h.platform, hal.account, 1_000n * TOKEN);
    const swapped = await h.call(hal, 'POST', '/swap-to-usdc', { amount_tokens: String(100n * TOKEN) });
    expect(swapped.status).toBe(201);

    const entriesOf = async (who: Member) => (await history(who, '?limit=50')).body.transactions as Entry[];
    const [gusEntries, halEntries] = await until(
      'every move finalized',
      async () => [await entriesOf(gus), await entriesOf(hal)],
      (both) => both.flat().every((e) => e.status === 'finalized'),
      90_000,
    );
    // Replies and quotes are `post` entries, told apart by their description.
    const kindOf = (e: Entry) => (e.type === 'post' ? e.description : e.type) as string;
    expect(gusEntries.map(kindOf).sort()).toEqual(['Post', 'deposit', 'earn', 'earn', 'earn', 'send']);
    expect(halEntries.map(kindOf).sort()).toEqual([
      'Quote of a post',
      'Reply to a post',
      'deposit',
      'receive',
      'repost',
      'swap',
    ]);
    for (const [who, entries] of [
      [gus, gusEntries],
      [hal, halEntries],
    ] as const) {
      for (const entry of entries) {
        expect(entry.swap_tx).toEqual(expect.any(String));
        expect(entry.confirmed_at).toMatch(ISO);
        expect(Number.isSafeInteger(entry.slot), kindOf(entry)).toBe(true);
        expect(entry.finalized_at).toMatch(ISO);
        expect(await payment(who, entry.swap_tx as string), kindOf(entry)).toEqual({
          status: 200,
          body: entry,
        });
      }
    }
    const { data, errors } = await h.gql(
      hal,
      `{ viewer { transactions(first: 20) { edges { node { ${TX_FIELDS} } } } } }`,
    );
    expect(errors).toBeUndefined();
    expect(nodesOf(data.viewer.transactions)).toEqual(halEntries.map(graphqlOf));
  }, 150_000);
});
