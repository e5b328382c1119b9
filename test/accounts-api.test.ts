import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let server: FastifyInstance;
let base: string;

beforeAll(async () => {
  // Sign-up allows 5 per hour per IP and every request here comes from 127.0.0.1: room for this
  // file's sign-ups (test/rate-limits-api.test.ts tests the limits at their real values).
  env = await openTestEnv({ RATE_LIMIT_MULTIPLIER: '4' }, { chain: true });
  await env.app.bootstrapChain();
  server = await buildServer(env.app);
  base = await server.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

async function call(
  method: string,
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      ...options.headers,
    },
    body:
      options.body === undefined
        ? undefined
        : typeof options.body === 'string'
          ? options.body
          : JSON.stringify(options.body),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, body: json as Record<string, any>, text };
}

async function signUp(handle: string, displayName?: string) {
  const response = await call('POST', '/api/v1/accounts', {
    body: { handle, ...(displayName ? { display_name: displayName } : {}) },
  });
  expect(response.status, response.text).toBe(201);
  return response.body as { account: Record<string, any>; api_key: string };
}

let alice: { account: Record<string, any>; api_key: string };
let bob: { account: Record<string, any>; api_key: string };

describe('sign-up', () => {
  test('creates the account, its wallet (no token accounts on chain until paid), and a key shown once', async () => {
    alice = await signUp('alice_1', 'Alice');
    expect(alice.api_key).toMatch(/^lf_live_[0-9A-Za-z]{40}$/);
    expect(alice.account).toEqual({
      handle: 'alice_1',
      display_name: 'Alice',
      avatar_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/avatars\/[0-9a-f-]{36}\.svg$/),
      bio: '',
      wallet_address: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/),
      earned_usdc: 0,
      total_earned: 0,
      total_spent: 0,
      native_tokens: '0',
    });
    // A sign-up writes nothing on chain: the first payment to the wallet opens its token account
    // (test/unfunded-wallets.test.ts), so farming sign-ups costs the fee payer no rent.
    const accounts = await env.app.rpc.call<{ value: unknown[] }>('getTokenAccountsByOwner', [
      alice.account.wallet_address,
      { programId: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA' },
      { encoding: 'jsonParsed' },
    ]);
    expect(accounts.value).toEqual([]);
    const avatar = await fetch(alice.account.avatar_url as string);
    expect(avatar.headers.get('content-type')).toBe('image/svg+xml');
    bob = await signUp('bob_2');
    expect(bob.account.display_name).toBe('bob_2');
  });

  test('keys are stored only as hashes', async () => {
    const rows = await env.app.db.selectFrom('api_keys').selectAll().execute();
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const row of rows) {
      expect(row.key_hash).toHaveLength(32);
      expect(JSON.stringify(row)).not.toContain(alice.api_key.slice(8));
      expect(JSON.stringify(row)).not.toContain(bob.api_key.slice(8));
    }
  });

  test('a taken handle is 409, a bad handle 400 naming the field, a non-JSON body 415', async () => {
    expect((await call('POST', '/api/v1/accounts', { body: { handle: 'alice_1' } })).body).toEqual({
      error: 'conflict',
      message: 'The handle "alice_1" is taken',
    });
    const bad = await call('POST', '/api/v1/accounts', { body: { handle: 'Bad Handle' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'invalid_request', message: expect.stringMatching(/^handle /) });
    const extra = await call('POST', '/api/v1/accounts', { body: { handle: 'carol_3', admin: true } });
    expect(extra.status).toBe(400);
    expect(extra.body.message).toMatch(/additional properties \(admin\)/);
    const form = await call('POST', '/api/v1/accounts', {
      body: 'handle=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
  });
});

describe('authentication and scopes', () => {
  test('a missing or invalid key is 401 with exactly error and message', async () => {
    const missing = await call('GET', '/api/v1/me');
    expect(missing.status).toBe(401);
    expect(Object.keys(missing.body)).toEqual(['error', 'message']);
    expect(missing.body.error).toBe('unauthorized');
    // The last character changed (to one it is not: a key ending in X must not stay valid).
    const altered = `${alice.api_key.slice(0, -1)}${alice.api_key.endsWith('X') ? 'Y' : 'X'}`;
    for (const key of ['lf_live_nope', altered, 'Basic abc']) {
      const invalid = await call('GET', '/api/v1/me', {
        headers: { authorization: key.startsWith('Basic') ? key : `Bearer ${key}` },
      });
      expect(invalid.status).toBe(401);
      expect(invalid.body).toEqual({ error: 'unauthorized', message: 'Invalid API key' });
    }
  });

  test('a key without the route scope is 403 naming the scope', async () => {
    const { key } = await (
      await import('../src/domain/auth/api-keys.service.js')
    ).createApiKey(env.app.apiKeys, (await env.app.accounts.byHandle('bob_2'))!.id, ['post']);
    const response = await call('GET', '/api/v1/me', { key });
    expect(response.status).toBe(403);
    expect(response.body).toEqual({ error: 'forbidden', message: "API key lacks the 'read' scope" });
    const follow = await call('POST', '/api/v1/users/alice_1/follow', { key });
    expect(follow.body).toEqual({ error: 'forbidden', message: "API key lacks the 'engage' scope" });
  });

  test('a third key is refused', async () => {
    const { createApiKey } = await import('../src/domain/auth/api-keys.service.js');
    const bobId = (await env.app.accounts.byHandle('bob_2'))!.id;
    await expect(createApiKey(env.app.apiKeys, bobId)).rejects.toThrow(/at most 2 API keys/);
  });
});

describe('profiles', () => {
  test('GET /me is the own profile', async () => {
    const me = await call('GET', '/api/v1/me', { key: alice.api_key });
    expect(me.status).toBe(200);
    expect(me.body).toEqual(alice.account);
    expect(me.headers.get('ratelimit-policy')).toBe('"read";q=240;w=60');
    expect(me.headers.get('ratelimit')).toMatch(/^"read";r=\d+;t=\d+$/);
  });

  test('GET /me shows ledger balances in dollars', async () => {
    const account = (await env.app.accounts.byHandle('alice_1'))!;
    await env.app.ledger.record({
      kind: 'deposit',
      idempotencyKey: 'deposit:test-me',
      legs: [
        { account: { kind: 'external' }, units: -4_250_000n, counts: 'none' },
        { account: { kind: 'user', accountId: account.id }, units: 4_250_000n, counts: 'none' },
      ],
    });
    const me = await call('GET', '/api/v1/me', { key: alice.api_key });
    expect(me.body).toMatchObject({ earned_usdc: 4.25, total_earned: 0, total_spent: 0 });
  });

  test('PATCH changes only the fields sent, and validates each', async () => {
    const patched = await call('PATCH', '/api/v1/me/profile', {
      key: alice.api_key,
      body: { bio: 'I post.' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({
      handle: 'alice_1',
      display_name: 'Alice',
      bio: 'I post.',
      avatar_url: alice.account.avatar_url,
    });
    const long = await call('PATCH', '/api/v1/me/profile', {
      key: alice.api_key,
      body: { bio: 'x'.repeat(161) },
    });
    expect(long.status).toBe(400);
    expect(long.body.message).toBe('bio must NOT have more than 160 characters');
    const wrongType = await call('PATCH', '/api/v1/me/profile', {
      key: alice.api_key,
      body: { display_name: 42 },
    });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.message).toBe('display_name must be string');
  });

  test('a handle changes once per 7 days; the refusal says when it may change again', async () => {
    const renamed = await call('PATCH', '/api/v1/me/profile', {
      key: alice.api_key,
      body: { handle: 'alice_new' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.handle).toBe('alice_new');
    const taken = await call('PATCH', '/api/v1/me/profile', {
      key: bob.api_key,
      body: { handle: 'alice_new' },
    });
    expect(taken.status).toBe(409);
    const again = await call('PATCH', '/api/v1/me/profile', {
      key: alice.api_key,
      body: { handle: 'alice_again' },
    });
    expect(again.status).toBe(409);
    const allowedAt = /allowed at (\S+)$/.exec(again.body.message as string)?.[1];
    expect(new Date(allowedAt!).getTime() - Date.now()).toBeGreaterThan(6.9 * 24 * 3600 * 1000);
  });

  test('public profiles count follows; follow is idempotent and DELETE unfollows', async () => {
    expect((await call('POST', '/api/v1/users/@alice_new/follow', { key: bob.api_key })).body).toEqual({
      followed: true,
    });
    expect((await call('POST', '/api/v1/users/alice_new/follow', { key: bob.api_key })).body).toEqual({
      followed: true,
    });
    const profile = await call('GET', '/api/v1/users/@alice_new', { key: bob.api_key });
    expect(profile.body).toMatchObject({
      handle: 'alice_new',
      follower_count: 1,
      following_count: 0,
      post_count: 0,
    });
    expect(Object.keys(profile.body).sort()).toEqual(
      [
        'avatar_url',
        'bio',
        'display_name',
        'follower_count',
        'following_count',
        'handle',
        'post_count',
        'wallet_address',
      ].sort(),
    );
    expect((await call('DELETE', '/api/v1/users/alice_new/follow', { key: bob.api_key })).body).toEqual({
      followed: false,
    });
    expect((await call('GET', '/api/v1/users/alice_new', { key: bob.api_key })).body.follower_count).toBe(0);
    expect((await call('POST', '/api/v1/users/bob_2/follow', { key: bob.api_key })).status).toBe(400);
    const unknown = await call('GET', '/api/v1/users/nobody_here', { key: bob.api_key });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'not_found', message: 'No account with handle "nobody_here"' });
  });
});

describe('a read key cannot take the account over', () => {
  /** An account made through the service (sign-ups are rate-limited per IP), with a full key. */
  async function member(handle: string) {
    const { createAccount } = await import('../src/domain/accounts/accounts.service.js');
    const { createApiKey } = await import('../src/domain/auth/api-keys.service.js');
    const account = await createAccount(env.app, { handle });
    const { key } = await createApiKey(env.app.apiKeys, account.id);
    return { id: account.id, key };
  }

  test('a read-only key may edit the bio but not the handle (403); the full key still can', async () => {
    const { createApiKey } = await import('../src/domain/auth/api-keys.service.js');
    const owner = await member('owner_rest');
    const { key: readKey } = await createApiKey(env.app.apiKeys, owner.id, ['read']);
    const bio = await call('PATCH', '/api/v1/me/profile', { key: readKey, body: { bio: 'read keys may' } });
    expect(bio.status).toBe(200);
    const rename = await call('PATCH', '/api/v1/me/profile', {
      key: readKey,
      body: { handle: 'stolen_rest', bio: 'and this' },
    });
    expect(rename.status).toBe(403);
    expect(rename.body).toEqual({
      error: 'forbidden',
      message:
        "API key lacks the 'post', 'engage', 'send' scopes: Changing the handle needs a key holding every scope (read, post, engage, send)",
    });
    // Nothing of the refused patch was applied, and the handle is still free for its owner.
    const me = await call('GET', '/api/v1/me', { key: owner.key });
    expect(me.body).toMatchObject({ handle: 'owner_rest', bio: 'read keys may' });
    // Sending the current handle back is no change: allowed with any key that may edit the profile.
    expect(
      (await call('PATCH', '/api/v1/me/profile', { key: readKey, body: { handle: 'owner_rest' } })).status,
    ).toBe(200);
    const renamed = await call('PATCH', '/api/v1/me/profile', {
      key: owner.key,
      body: { handle: 'owner_rest2' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.handle).toBe('owner_rest2');
  });

  test('a released handle stays reserved for its owner: nobody else can sign up or rename to it, sends to it reach nobody', async () => {
    const victim = await member('victim_h');
    const other = await member('other_h');
    const renamed = await call('PATCH', '/api/v1/me/profile', {
      key: victim.key,
      body: { handle: 'victim_h2' },
    });
    expect(renamed.status).toBe(200);

    const signUp = await call('POST', '/api/v1/accounts', { body: { handle: 'victim_h' } });
    expect(signUp.status).toBe(409);
    expect(signUp.body).toEqual({
      error: 'conflict',
      message: expect.stringMatching(
        /^The handle "victim_h" is taken: it stays reserved for its previous owner until \d{4}-\d\d-\d\dT/,
      ),
    });
    const until = new Date(/until (\S+)$/.exec(signUp.body.message as string)![1]!);
    expect(until.getTime() - Date.now()).toBeGreaterThan(6.9 * 24 * 3600 * 1000);

    const rename = await call('PATCH', '/api/v1/me/profile', {
      key: other.key,
      body: { handle: 'victim_h' },
    });
    expect(rename.status).toBe(409);
    expect(rename.body.error).toBe('conflict');
    expect(rename.body.message).toMatch(/reserved for its previous owner/);

    // Sends resolve the recipient by its current handle: the released one belongs to nobody.
    const send = await call('POST', '/api/v1/send', {
      key: other.key,
      body: { to_handle: 'victim_h', amount_usd: 0.01 },
    });
    expect(send.status).toBe(404);
    expect(send.body.error).toBe('not_found');
    expect(
      await env.app.db.selectFrom('sends').select('id').where('sender_id', '=', other.id).execute(),
    ).toEqual([]);
  });

  test('the owner may take a released handle back during the cooldown; the handle left is then reserved', async () => {
    const owner = await member('undo_me');
    const other = await member('undo_other');
    expect(
      (await call('PATCH', '/api/v1/me/profile', { key: owner.key, body: { handle: 'undo_me2' } })).status,
    ).toBe(200);
    // A new handle is still under the cooldown...
    const elsewhere = await call('PATCH', '/api/v1/me/profile', {
      key: owner.key,
      body: { handle: 'undo_me3' },
    });
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body.message).toMatch(/^The handle can change once every 7 days/);
    // ...but returning to the released one is not.
    const back = await call('PATCH', '/api/v1/me/profile', { key: owner.key, body: { handle: 'undo_me' } });
    expect(back.status).toBe(200);
    expect(back.body.handle).toBe('undo_me');
    const taken = await call('PATCH', '/api/v1/me/profile', { key: other.key, body: { handle: 'undo_me2' } });
    expect(taken.status).toBe(409);
    expect(taken.body.message).toMatch(/"undo_me2" is taken: it stays reserved for its previous owner/);
    // The undo neither restarted the cooldown nor extended the reservation past the first change's.
    const reservations = await env.app.db
      .selectFrom('released_handles')
      .select(['handle', 'reserved_until'])
      .where('account_id', '=', owner.id)
      .execute();
    expect(reservations.map((r) => r.handle)).toEqual(['undo_me2']);
    const account = (await env.app.accounts.byId(owner.id))!;
    expect(reservations[0]!.reserved_until.getTime()).toBe(
      account.handleChangedAt!.getTime() + 7 * 24 * 3600 * 1000,
    );
  });

  test('once the reservation ends, the handle is anyone’s again', async () => {
    const first = await member('expiring_h');
    const second = await member('expiring_x');
    expect(
      (await call('PATCH', '/api/v1/me/profile', { key: first.key, body: { handle: 'expiring_h2' } })).status,
    ).toBe(200);
    await env.app.db
      .updateTable('released_handles')
      .set({ reserved_until: new Date(Date.now() - 1000) })
      .where('handle', '=', 'expiring_h')
      .execute();
    const taken = await call('PATCH', '/api/v1/me/profile', {
      key: second.key,
      body: { handle: 'expiring_h' },
    });
    expect(taken.status).toBe(200);
    expect(taken.body.handle).toBe('expiring_h');
    expect(
      await env.app.db
        .selectFrom('released_handles')
        .select('account_id')
        .where('handle', '=', 'expiring_h')
        .execute(),
    ).toEqual([]);
  });

  test('concurrent sign-ups and a rename releasing the handle never hand it to a newcomer', async () => {
    const { createAccount } = await import('../src/domain/accounts/accounts.service.js');
    const owner = await member('race_h');
    const results = await Promise.allSettled([
      call('PATCH', '/api/v1/me/profile', { key: owner.key, body: { handle: 'race_h2' } }),
      ...Array.from({ length: 5 }, () => createAccount(env.app, { handle: 'race_h' })),
    ]);
    const holders = await env.app.db
      .selectFrom('accounts')
      .select('id')
      .where('handle', '=', 'race_h')
      .execute();
    // The rename goes through; every sign-up is refused, before or after it (taken, then reserved).
    expect(results[0]).toMatchObject({ status: 'fulfilled', value: { status: 200 } });
    expect(holders).toEqual([]);
    for (const attempt of results.slice(1)) {
      expect(attempt.status).toBe('rejected');
      expect((attempt as PromiseRejectedResult).reason).toMatchObject({ code: 'conflict' });
    }
  });
});
