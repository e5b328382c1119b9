import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { settledMoney } from './support/balances.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

// Text that reads differently from what it is: a right-to-left override turns
// "Received from @x: <memo>" around, a C0 or C1 control (bell, NEL) rings or breaks lines where a
// reader expects one field. Each is refused as bad input by the field's rule, on both transports,
// before anything is written (src/domain/text/storable-text.ts).
const REFUSED = [
  ['U+202E right-to-left override', '\u202e', /bidirectional control characters.*U\+202E/],
  ['U+0007 bell (C0)', '\u0007', /control characters.*U\+0007/],
  ['U+0085 next line (C1)', '\u0085', /control characters.*U\+0085/],
] as const;

let h: ServiceHarness;
let writer: Member;
let friend: Member;

beforeAll(async () => {
  // Limits off: this file sends, posts and signs up more often than the per-minute budgets allow.
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  writer = await h.member('deceit_writer', 10_000_000n);
  friend = await h.member('deceit_friend', 0n);
});
afterAll(async () => {
  await h?.close();
});

async function json(response: Response) {
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** What every refusal must leave as it was: both profiles, both balances, posts and sends. */
async function snapshot() {
  const db = h.env.app.db;
  return {
    writer: (await json(await h.call(writer, 'GET', '/me'))).body,
    friend: (await json(await h.call(friend, 'GET', '/me'))).body,
    writerMoney: await settledMoney(h.env.app, writer.account.id),
    friendMoney: await settledMoney(h.env.app, friend.account.id),
    accounts: (
      await db
        .selectFrom('accounts')
        .select((e) => e.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
    posts: (
      await db
        .selectFrom('posts')
        .select((e) => e.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
    sends: (
      await db
        .selectFrom('sends')
        .select((e) => e.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  };
}

describe('REST refuses control and bidi characters with 400 invalid_request naming the field', () => {
  const fields = [
    ['sign-up handle', 'handle', 'POST', '/accounts', (c: string) => ({ handle: `evil${c}x` })],
    [
      'sign-up display_name',
      'display_name',
      'POST',
      '/accounts',
      (c: string) => ({ handle: 'deceit_new', display_name: `Admin${c}` }),
    ],
    [
      'profile display_name',
      'display_name',
      'PATCH',
      '/me/profile',
      (c: string) => ({ display_name: `a${c}b` }),
    ],
    ['profile bio', 'bio', 'PATCH', '/me/profile', (c: string) => ({ bio: `my bio${c}` })],
    ['profile handle', 'handle', 'PATCH', '/me/profile', (c: string) => ({ handle: `deceit${c}w` })],
    [
      'send memo',
      'memo',
      'POST',
      '/send',
      (c: string) => ({ to_handle: 'deceit_friend', amount_usd: 1, memo: `lunch ${c}00.001$ rof` }),
    ],
    [
      'post content',
      'content',
      'POST',
      '/posts',
      (c: string) => ({ type: 'post', content: `hello${c}world` }),
    ],
  ] as const;

  for (const [name, field, method, path, body] of fields) {
    test.each(REFUSED)(`${name}: %s`, async (_label, character, message) => {
      const before = await snapshot();
      const answer = await json(await h.call(writer, method, path, body(character)));
      expect(answer.status).toBe(400);
      expect(Object.keys(answer.body).sort()).toEqual(['error', 'message']);
      expect(answer.body.error).toBe('invalid_request');
      expect(String(answer.body.message)).toContain(field);
      // The REST schema's handle pattern answers before the domain rule does; its message names
      // the field and the pattern instead of the character.
      if (field !== 'handle') expect(answer.body.message).toMatch(message);
      expect(await snapshot()).toEqual(before);
    });
  }
});

describe('GraphQL refuses control and bidi characters with BAD_USER_INPUT naming the field', () => {
  const UPDATE = 'mutation ($input: UpdateProfileInput!) { updateProfile(input: $input) { handle } }';
  const SEND = 'mutation ($input: SendInput!) { send(input: $input) { id } }';
  const POST = 'mutation ($input: CreatePostInput!) { createPost(input: $input) { id } }';
  // GraphQL has no sign-up: accounts open over REST only.
  const fields = [
    ['updateProfile displayName', 'display_name', UPDATE, (c: string) => ({ displayName: `a${c}b` })],
    ['updateProfile bio', 'bio', UPDATE, (c: string) => ({ bio: `my bio${c}` })],
    ['updateProfile handle', 'handle', UPDATE, (c: string) => ({ handle: `deceit${c}w` })],
    [
      'send memo',
      'memo',
      SEND,
      (c: string) => ({ toHandle: 'deceit_friend', amountUsd: '1', memo: `x${c}` }),
    ],
    ['createPost content', 'content', POST, (c: string) => ({ type: 'POST', content: `hello${c}world` })],
  ] as const;

  for (const [name, field, query, input] of fields) {
    test.each(REFUSED)(`${name}: %s`, async (_label, character, message) => {
      const before = await snapshot();
      const answer = await h.gql(writer, query, { input: input(character) });
      expect(answer.data).toBeNull();
      expect(answer.errors).toHaveLength(1);
      expect(answer.errors?.[0]).toMatchObject({
        message: expect.stringMatching(message),
        extensions: { code: 'BAD_USER_INPUT', field },
      });
      expect(answer.errors?.[0].message).toContain(field);
      expect(await snapshot()).toEqual(before);
    });
  }
});

describe('what stays allowed', () => {
  const content = 'first line\n\tindented second line\r\nthird line, with שלום and 👩🏽‍💻';

  test('REST: post content keeps newlines, tabs and CRLF; names and memos keep right-to-left letters', async () => {
    const post = await json(await h.call(writer, 'POST', '/posts', { type: 'post', content }));
    expect(post.status).toBe(201);
    expect(post.body.content).toBe(content);
    const stored = await h.env.app.db
      .selectFrom('posts')
      .select('content')
      .where('id', '=', post.body.id as string)
      .executeTakeFirstOrThrow();
    expect(stored.content).toBe(content);

    const profile = await json(
      await h.call(writer, 'PATCH', '/me/profile', { display_name: 'כותב', bio: 'مرحبا' }),
    );
    expect(profile.status).toBe(200);
    expect(profile.body).toMatchObject({ display_name: 'כותב', bio: 'مرحبا' });

    const sent = await h.call(writer, 'POST', '/send', {
      to_handle: 'deceit_friend',
      amount_usd: 0.5,
      memo: 'תודה',
    });
    expect(sent.status).toBe(201);
    expect(await settledMoney(h.env.app, friend.account.id)).toMatchObject({ availableMicro: 500_000n });
  });

  test('GraphQL: post content keeps newlines and tabs', async () => {
    const answer = await h.gql(
      writer,
      'mutation ($input: CreatePostInput!) { createPost(input: $input) { content } }',
      {
        input: { type: 'POST', content },
      },
    );
    expect(answer.errors).toBeUndefined();
    expect(answer.data.createPost.content).toBe(content);
  });
});
