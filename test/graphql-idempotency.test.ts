import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { claimKey } from '../src/adapters/postgres/idempotency.repository.js';
import { keyedRequestHash } from '../src/app/write-path/with-idempotency-key.js';
import { settledMoney } from './support/balances.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/*
 * GraphQL's paid mutations under an Idempotency-Key: the REST hook's rules (test/idempotency.test.ts)
 * through the same implementation (app/write-path/with-idempotency-key.ts).
 */

let h: ServiceHarness;

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
});
afterAll(async () => {
  await h?.close();
});

const CREATE_POST =
  'mutation ($content: String!) { createPost(input: { content: $content, type: POST }) { id content swapTx costUsdMicro createdAt } }';

const available = async (who: Member) => (await settledMoney(h.env.app, who.account.id)).availableMicro;
const postsWith = (content: string) =>
  h.env.app.db.selectFrom('posts').select('id').where('content', '=', content).execute();

describe('GraphQL paid mutations under an Idempotency-Key', () => {
  test('five concurrent createPost with one Idempotency-Key header answer one post, paid once', async () => {
    const author = await h.member('gidem_racer', 5_000_000n);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        h.gql(author, CREATE_POST, { content: 'raced once' }, { 'idempotency-key': 'race-1' }),
      ),
    );
    for (const answer of answers) expect(answer.errors).toBeUndefined();
    const created = answers.map((answer) => answer.data.createPost as { id: string; swapTx: string });
    const ids = new Set(created.map((post) => post.id));
    expect(ids.size).toBe(1);
    expect(new Set(created.map((post) => post.swapTx)).size).toBe(1);
    // Replays resolve the kept result: money and dates come back as the first answer gave them.
    expect(created).toEqual(Array.from({ length: 5 }, () => created[0]));
    expect(await postsWith('raced once')).toEqual([{ id: [...ids][0] }]);
    expect(await available(author)).toBe(4_000_000n);
  });

  test('a retried send returns the same swapTx and pays once', async () => {
    const alice = await h.member('gidem_alice', 3_000_000n);
    const bob = await h.member('gidem_bob', 1n);
    const send = () =>
      h.gql(
        alice,
        'mutation ($input: SendInput!) { send(input: $input, idempotencyKey: "send-1") { id swapTx amountUsdMicro } }',
        { input: { toHandle: 'gidem_bob', amountUsd: '1.25', memo: 'once' } },
      );
    const first = await send();
    expect(first.errors).toBeUndefined();
    const again = await send();
    expect(again.errors).toBeUndefined();
    expect(again.data.send).toEqual(first.data.send);
    expect(first.data.send.amountUsdMicro).toBe('1250000');
    expect(await available(alice)).toBe(1_750_000n);
    expect(await available(bob)).toBe(1_250_001n);
    const sends = await h.env.app.db
      .selectFrom('sends')
      .select('id')
      .where('sender_id', '=', alice.account.id)
      .execute();
    expect(sends).toHaveLength(1);
  });

  test('the same key with other input is refused and moves nothing', async () => {
    const author = await h.member('gidem_changer', 3_000_000n);
    const first = await h.gql(author, CREATE_POST, { content: 'first input' }, { 'idempotency-key': 'k-1' });
    expect(first.errors).toBeUndefined();
    const other = await h.gql(author, CREATE_POST, { content: 'other input' }, { 'idempotency-key': 'k-1' });
    expect(other.data).toBeNull();
    expect(other.errors?.[0]).toMatchObject({
      message: 'This Idempotency-Key was used with a different request',
      extensions: { code: 'IDEMPOTENCY_KEY_REUSED' },
    });
    expect(await postsWith('other input')).toEqual([]);
    expect(await available(author)).toBe(2_000_000n);
  });

  test('a kept refusal is answered again and pays nothing', async () => {
    const poor = await h.member('gidem_poor', 1n);
    const ask = () => h.gql(poor, CREATE_POST, { content: 'cannot pay' }, { 'idempotency-key': 'poor-1' });
    const first = await ask();
    expect(first.errors?.[0]?.extensions.code).toBe('INSUFFICIENT_FUNDS');
    const again = await ask();
    expect(again.errors?.[0]).toMatchObject({
      message: first.errors?.[0]?.message,
      extensions: { code: 'INSUFFICIENT_FUNDS' },
    });
    expect(await postsWith('cannot pay')).toEqual([]);
  });

  test('the header refuses an operation with two paid mutations; each idempotencyKey argument pays once', async () => {
    const author = await h.member('gidem_pair', 5_000_000n);
    const pair = (args: [string, string]) =>
      `mutation { a: createPost(input: { content: "pair a", type: POST }${args[0]}) { id } b: createPost(input: { content: "pair b", type: POST }${args[1]}) { id } }`;

    const refused = await h.gql(author, pair(['', '']), {}, { 'idempotency-key': 'pair-header' });
    expect(refused.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(refused.errors?.[0]?.message).toMatch(/give each its idempotencyKey argument/);
    expect(await postsWith('pair a')).toEqual([]);
    expect(await available(author)).toBe(5_000_000n);

    const keyed = pair([', idempotencyKey: "pair-a"', ', idempotencyKey: "pair-b"']);
    const first = await h.gql(author, keyed);
    expect(first.errors).toBeUndefined();
    const again = await h.gql(author, keyed);
    expect(again.data).toEqual(first.data);
    expect(first.data.a.id).not.toBe(first.data.b.id);
    expect(await available(author)).toBe(3_000_000n);
  });

  test('a malformed key is BAD_USER_INPUT and moves nothing', async () => {
    const author = await h.member('gidem_badkey', 2_000_000n);
    const answer = await h.gql(
      author,
      'mutation { createPost(input: { content: "bad key", type: POST }, idempotencyKey: "with space") { id } }',
    );
    expect(answer.errors?.[0]?.extensions.code).toBe('BAD_USER_INPUT');
    expect(await postsWith('bad key')).toEqual([]);
  });

  test('a key whose owner died before paying is taken over once its lease runs out, and pays once', async () => {
    const author = await h.member('gidem_heir', 2_000_000n);
    // The row a request leaves when its process dies after claiming the key, before its commit.
    const requestHash = keyedRequestHash(
      'graphql',
      'createPost',
      JSON.stringify({ input: { content: 'inherited', type: 'post' } }),
    );
    const dead = { accountId: author.account.id, key: 'heir-1', owner: crypto.randomUUID() };
    expect(await claimKey(h.env.app.db, dead, requestHash, { leaseMs: 500, ttlHours: 24 })).toBe(true);

    const started = Date.now();
    const answer = await h.gql(
      author,
      CREATE_POST,
      { content: 'inherited' },
      { 'idempotency-key': 'heir-1' },
    );
    expect(answer.errors).toBeUndefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(await postsWith('inherited')).toEqual([{ id: answer.data.createPost.id }]);
    const again = await h.gql(author, CREATE_POST, { content: 'inherited' }, { 'idempotency-key': 'heir-1' });
    expect(again.data).toEqual(answer.data);
    expect(await available(author)).toBe(1_000_000n);
  });
});
