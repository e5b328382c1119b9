import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { maskError } from '../src/api/graphql/errors.js';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import type { Scope } from '../src/domain/auth/api-key.js';
import { AppError } from '../src/domain/errors.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

interface Api {
  env: TestEnv;
  server: FastifyInstance;
  base: string;
}

async function openApi(overrides: Record<string, string> = {}): Promise<Api> {
  const env = await openTestEnv(overrides, { chain: true });
  await env.app.bootstrapChain();
  const server = await buildServer(env.app);
  const base = await server.listen({ port: 0, host: '127.0.0.1' });
  return { env, server, base };
}

async function closeApi(api: Api | undefined): Promise<void> {
  await api?.server.close();
  await api?.env.close();
}

/** One GraphQL request over real HTTP; `key` goes in `Authorization: Bearer`. */
async function gql(
  api: Api,
  query: string,
  options: { key?: string; variables?: Record<string, unknown>; authorization?: string } = {},
) {
  const authorization = options.authorization ?? (options.key ? `Bearer ${options.key}` : undefined);
  const response = await fetch(`${api.base}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      ...(authorization ? { authorization } : {}),
    },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  const body = (await response.json()) as { data?: any; errors?: any[] };
  return { status: response.status, headers: response.headers, body, data: body.data, errors: body.errors };
}

async function newAccount(env: TestEnv, handle: string, scopes?: Scope[]) {
  const account = await createAccount(env.app, { handle });
  const { key } = await createApiKey(env.app.apiKeys, account.id, scopes);
  return { account, key };
}

interface ApiKeyJson {
  id: string;
  revokedAt: string | null;
}

const handlesOf = (connection: { edges: Array<{ node: { handle: string } }> }) =>
  connection.edges.map((edge) => edge.node.handle);

let api: Api;
let alice: { key: string; id: string };
let bob: { key: string; id: string };

beforeAll(async () => {
  api = await openApi();
  const a = await newAccount(api.env, 'alice_g');
  alice = { key: a.key, id: a.account.id };
  const b = await newAccount(api.env, 'bob_g');
  bob = { key: b.key, id: b.account.id };
});
afterAll(() => closeApi(api));

const VIEWER = `{
  viewer {
    handle displayName bio avatarUrl walletAddress socialUsername role
    earnedUsdc totalEarned totalSpent createdAt followerCount followingCount postCount
    apiKeys { id scopes createdAt lastUsedAt revokedAt }
  }
}`;

describe('viewer and API keys', () => {
  test('viewer is the own account with its keys, money as micro-USD strings and a default avatar', async () => {
    const { status, data, errors, headers } = await gql(api, VIEWER, { key: alice.key });
    expect(errors).toBeUndefined();
    expect(status).toBe(200);
    expect(data.viewer).toEqual({
      handle: 'alice_g',
      displayName: 'alice_g',
      bio: '',
      avatarUrl: `${api.base}/avatars/${alice.id}.svg`,
      walletAddress: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/),
      socialUsername: null,
      role: 'USER',
      earnedUsdc: '0',
      totalEarned: '0',
      totalSpent: '0',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      followerCount: 0,
      followingCount: 0,
      postCount: 0,
      apiKeys: [
        {
          id: alice.key.slice('lf_live_'.length, 'lf_live_'.length + 8),
          scopes: ['READ', 'POST', 'ENGAGE', 'SEND'],
          createdAt: expect.any(String),
          lastUsedAt: expect.any(String),
          revokedAt: null,
        },
      ],
    });
    expect(headers.get('ratelimit-policy')).toBe('"read";q=60;w=60');
    expect(headers.get('ratelimit')).toMatch(/^"read";r=\d+;t=\d+$/);
  });

  test('no field of the schema can reveal a key secret', async () => {
    const { data } = await gql(api, '{ __type(name: "ApiKey") { fields { name } } }');
    expect((data.__type.fields as Array<{ name: string }>).map((f) => f.name).sort()).toEqual([
      'createdAt',
      'id',
      'lastUsedAt',
      'revokedAt',
      'scopes',
    ]);
  });

  test('createApiKey returns the key once; a third active key is CONFLICT', async () => {
    const created = await gql(
      api,
      'mutation { createApiKey(scopes: [READ]) { key apiKey { id scopes revokedAt } } }',
      { key: bob.key },
    );
    expect(created.errors).toBeUndefined();
    const { key, apiKey } = created.data.createApiKey as { key: string; apiKey: unknown };
    expect(key).toMatch(/^lf_live_[0-9A-Za-z]{40}$/);
    expect(apiKey).toEqual({ id: key.slice(8, 16), scopes: ['READ'], revokedAt: null });
    expect((await gql(api, '{ viewer { handle } }', { key })).data).toEqual({ viewer: { handle: 'bob_g' } });

    const third = await gql(api, 'mutation { createApiKey { key } }', { key: bob.key });
    expect(third.status).toBe(200);
    expect(third.data).toBeNull();
    expect(third.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/at most 2 API keys/),
      path: ['createApiKey'],
      extensions: { code: 'CONFLICT' },
    });
    const empty = await gql(api, 'mutation { createApiKey(scopes: []) { key } }', { key: bob.key });
    expect(empty.errors?.[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  test('revokeApiKey revokes: the key is then HTTP 401, and it is listed as revoked', async () => {
    const { key } = await createApiKey(api.env.app.apiKeys, alice.id, ['read']);
    const id = key.slice(8, 16);
    // A read-only key cannot mint a key, least of all one that may send money.
    const escalate = await gql(api, 'mutation { createApiKey(scopes: [READ, SEND]) { key } }', { key });
    expect(escalate.errors?.[0]).toMatchObject({
      message:
        "API key lacks the 'post', 'engage', 'send' scopes: Creating API keys needs a key holding every scope (read, post, engage, send)",
      extensions: { code: 'FORBIDDEN' },
    });
    const revoked = await gql(api, 'mutation ($id: ID!) { revokeApiKey(id: $id) }', {
      key: alice.key,
      variables: { id },
    });
    expect(revoked.data).toEqual({ revokeApiKey: true });
    const refused = await gql(api, '{ viewer { handle } }', { key });
    expect(refused.status).toBe(401);
    expect(refused.errors?.[0]).toMatchObject({
      message: 'Invalid API key',
      extensions: { code: 'UNAUTHENTICATED' },
    });
    const again = await gql(api, 'mutation ($id: ID!) { revokeApiKey(id: $id) }', {
      key: alice.key,
      variables: { id },
    });
    expect(again.errors?.[0].extensions.code).toBe('NOT_FOUND');
    const listed = await gql(api, '{ viewer { apiKeys { id revokedAt } } }', { key: alice.key });
    expect((listed.data.viewer.apiKeys as ApiKeyJson[]).find((k) => k.id === id)?.revokedAt).toEqual(
      expect.any(String),
    );
  });
});

describe('a read key cannot take the account over', () => {
  const REVOKE = 'mutation ($id: ID!) { revokeApiKey(id: $id) }';
  const UPDATE = 'mutation ($input: UpdateProfileInput!) { updateProfile(input: $input) { handle bio } }';
  const keyIdOf = (key: string) => key.slice('lf_live_'.length, 'lf_live_'.length + 8);

  test('a read-only key cannot create keys, revoke the full key or change the handle; the full key keeps working', async () => {
    const owner = await newAccount(api.env, 'owner_g');
    const { key: readKey } = await createApiKey(api.env.app.apiKeys, owner.account.id, ['read']);

    const create = await gql(api, 'mutation { createApiKey(scopes: [READ]) { key } }', { key: readKey });
    expect(create.data).toBeNull();
    expect(create.errors?.[0]).toMatchObject({
      message: expect.stringMatching(
        /^API key lacks the 'post', 'engage', 'send' scopes: Creating API keys needs/,
      ),
      path: ['createApiKey'],
      extensions: { code: 'FORBIDDEN' },
    });
    const revoke = await gql(api, REVOKE, { key: readKey, variables: { id: keyIdOf(owner.key) } });
    expect(revoke.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/: Revoking another API key needs a key holding every scope/),
      extensions: { code: 'FORBIDDEN' },
    });
    // Unknown ids are refused the same way: a lesser key cannot probe which ids exist.
    const probe = await gql(api, REVOKE, { key: readKey, variables: { id: 'AAAAAAAA' } });
    expect(probe.errors?.[0].extensions.code).toBe('FORBIDDEN');
    const rename = await gql(api, UPDATE, { key: readKey, variables: { input: { handle: 'stolen_g' } } });
    expect(rename.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/: Changing the handle needs a key holding every scope/),
      extensions: { code: 'FORBIDDEN' },
    });
    // What the spec gives `read` stays: display name and bio.
    const bio = await gql(api, UPDATE, { key: readKey, variables: { input: { bio: 'still mine' } } });
    expect(bio.data).toEqual({ updateProfile: { handle: 'owner_g', bio: 'still mine' } });

    // The full key is untouched and still manages keys: it answers, and both keys are active.
    const viewer = await gql(api, '{ viewer { handle apiKeys { id revokedAt } } }', { key: owner.key });
    expect(viewer.data.viewer.handle).toBe('owner_g');
    expect((viewer.data.viewer.apiKeys as ApiKeyJson[]).map((k) => k.revokedAt)).toEqual([null, null]);
    const revokedByOwner = await gql(api, REVOKE, { key: owner.key, variables: { id: keyIdOf(readKey) } });
    expect(revokedByOwner.data).toEqual({ revokeApiKey: true });
    const created = await gql(api, 'mutation { createApiKey { key apiKey { scopes } } }', { key: owner.key });
    expect(created.data.createApiKey.apiKey.scopes).toEqual(['READ', 'POST', 'ENGAGE', 'SEND']);
  });

  test('any key may revoke itself', async () => {
    const owner = await newAccount(api.env, 'self_revoke');
    const { key: readKey } = await createApiKey(api.env.app.apiKeys, owner.account.id, ['read']);
    const revoked = await gql(api, REVOKE, { key: readKey, variables: { id: keyIdOf(readKey) } });
    expect(revoked.data).toEqual({ revokeApiKey: true });
    expect((await gql(api, '{ viewer { handle } }', { key: readKey })).status).toBe(401);
    expect((await gql(api, '{ viewer { handle } }', { key: owner.key })).data.viewer.handle).toBe(
      'self_revoke',
    );
  });

  test('a released handle is reserved for its owner, who may take it back during the cooldown', async () => {
    const owner = await newAccount(api.env, 'resv_g');
    const other = await newAccount(api.env, 'resv_other');
    const renamed = await gql(api, UPDATE, { key: owner.key, variables: { input: { handle: 'resv_g2' } } });
    expect(renamed.data.updateProfile.handle).toBe('resv_g2');
    const taken = await gql(api, UPDATE, { key: other.key, variables: { input: { handle: 'resv_g' } } });
    expect(taken.errors?.[0]).toMatchObject({
      message: expect.stringMatching(
        /^The handle "resv_g" is taken: it stays reserved for its previous owner/,
      ),
      extensions: { code: 'CONFLICT', field: 'handle', reservedUntil: expect.any(String) },
    });
    await expect(createAccount(api.env.app, { handle: 'resv_g' })).rejects.toMatchObject({
      code: 'conflict',
    });
    const back = await gql(api, UPDATE, { key: owner.key, variables: { input: { handle: 'resv_g' } } });
    expect(back.errors).toBeUndefined();
    expect(back.data.updateProfile.handle).toBe('resv_g');
  });
});

describe('profiles and follows', () => {
  test('updateProfile changes only the fields given, validates each, and keeps the handle cooldown', async () => {
    const UPDATE =
      'mutation ($input: UpdateProfileInput!) { updateProfile(input: $input) { handle displayName bio } }';
    const updated = await gql(api, UPDATE, {
      key: alice.key,
      variables: { input: { displayName: 'Alice G', bio: 'I post.' } },
    });
    expect(updated.data).toEqual({
      updateProfile: { handle: 'alice_g', displayName: 'Alice G', bio: 'I post.' },
    });

    const long = await gql(api, UPDATE, { key: alice.key, variables: { input: { bio: 'x'.repeat(161) } } });
    expect(long.errors?.[0]).toMatchObject({
      message: 'bio must be at most 160 characters',
      extensions: { code: 'BAD_USER_INPUT', field: 'bio' },
    });

    const renamed = await gql(api, UPDATE, { key: alice.key, variables: { input: { handle: 'alice_gql' } } });
    expect(renamed.data.updateProfile.handle).toBe('alice_gql');
    const again = await gql(api, UPDATE, { key: alice.key, variables: { input: { handle: 'alice_again' } } });
    expect(again.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/^The handle can change once every 7 days; next change allowed at /),
      extensions: { code: 'CONFLICT', allowedAt: expect.any(String) },
    });
    const taken = await gql(api, UPDATE, { key: bob.key, variables: { input: { handle: 'alice_gql' } } });
    expect(taken.errors?.[0].extensions.code).toBe('CONFLICT');
  });

  test('follow and unfollow are idempotent; user(handle) counts them and is null when unknown', async () => {
    const FOLLOW = 'mutation ($h: String!) { follow(handle: $h) { followed account { handle } } }';
    const UNFOLLOW = 'mutation ($h: String!) { unfollow(handle: $h) { followed account { handle } } }';
    const USER = 'query ($h: String!) { user(handle: $h) { handle followerCount followingCount postCount } }';
    for (let i = 0; i < 2; i++) {
      const followed = await gql(api, FOLLOW, { key: bob.key, variables: { h: '@alice_gql' } });
      expect(followed.data).toEqual({ follow: { followed: true, account: { handle: 'alice_gql' } } });
      expect(followed.headers.get('ratelimit-policy')).toBe('"like";q=30;w=60');
    }
    expect((await gql(api, USER, { key: bob.key, variables: { h: '@alice_gql' } })).data.user).toEqual({
      handle: 'alice_gql',
      followerCount: 1,
      followingCount: 0,
      postCount: 0,
    });
    expect((await gql(api, USER, { key: bob.key, variables: { h: 'bob_g' } })).data.user.followingCount).toBe(
      1,
    );
    for (let i = 0; i < 2; i++) {
      const unfollowed = await gql(api, UNFOLLOW, { key: bob.key, variables: { h: 'alice_gql' } });
      expect(unfollowed.data).toEqual({ unfollow: { followed: false, account: { handle: 'alice_gql' } } });
    }
    expect(
      (await gql(api, USER, { key: bob.key, variables: { h: 'alice_gql' } })).data.user.followerCount,
    ).toBe(0);
    expect((await gql(api, USER, { key: bob.key, variables: { h: 'nobody_here' } })).data).toEqual({
      user: null,
    });
    const self = await gql(api, FOLLOW, { key: bob.key, variables: { h: 'bob_g' } });
    expect(self.errors?.[0]).toMatchObject({
      message: 'You cannot follow yourself',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    const unknown = await gql(api, FOLLOW, { key: bob.key, variables: { h: 'nobody_here' } });
    expect(unknown.errors?.[0].extensions.code).toBe('NOT_FOUND');
  });

  test('followers is a connection paged with first and after, newest first, at most 50 a page', async () => {
    const followers: string[] = [];
    for (const handle of ['fan_one', 'fan_two', 'fan_three']) {
      const { key } = await newAccount(api.env, handle);
      const followed = await gql(api, 'mutation { follow(handle: "alice_gql") { followed } }', { key });
      expect(followed.errors).toBeUndefined();
      followers.unshift(handle);
    }
    const PAGE = `query ($after: String) { viewer { followers(first: 2, after: $after) {
      edges { cursor node { handle } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }`;
    const first = (await gql(api, PAGE, { key: alice.key })).data.viewer.followers;
    expect(handlesOf(first)).toEqual(followers.slice(0, 2));
    expect(first.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    expect(first.pageInfo.startCursor).toBe(first.edges[0].cursor);
    expect(first.pageInfo.endCursor).toBe(first.edges[1].cursor);
    const second = (await gql(api, PAGE, { key: alice.key, variables: { after: first.pageInfo.endCursor } }))
      .data.viewer.followers;
    expect(handlesOf(second)).toEqual(followers.slice(2));
    expect(second.pageInfo.hasNextPage).toBe(false);

    const following = await gql(
      api,
      '{ user(handle: "fan_one") { following(first: 50) { edges { node { handle } } } } }',
      {
        key: bob.key,
      },
    );
    expect(following.data.user.following.edges).toEqual([{ node: { handle: 'alice_gql' } }]);
    const tooMany = await gql(api, '{ viewer { followers(first: 51) { edges { cursor } } } }', {
      key: alice.key,
    });
    expect(tooMany.errors?.[0]).toMatchObject({
      message: 'first must be between 1 and 50',
      path: ['viewer', 'followers'],
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });
});

describe('authentication and scopes', () => {
  test('without a key public fields answer and viewer is UNAUTHENTICATED', async () => {
    const health = await gql(api, '{ health { status } }');
    expect(health.body).toEqual({ data: { health: { status: 'ok' } } });
    const anonymous = await gql(api, '{ viewer { handle } }');
    expect(anonymous.status).toBe(200);
    expect(anonymous.data).toBeNull();
    expect(anonymous.errors?.[0]).toMatchObject({
      message: 'Missing API key: send Authorization: Bearer <API_KEY>',
      path: ['viewer'],
      extensions: { code: 'UNAUTHENTICATED' },
    });
  });

  test('an invalid key fails the whole request with HTTP 401, public fields included', async () => {
    // The last character changed (to one it is not: a key ending in X must not stay valid).
    const altered = `${alice.key.slice(0, -1)}${alice.key.endsWith('X') ? 'Y' : 'X'}`;
    for (const authorization of [`Bearer ${altered}`, 'Bearer lf_live_nope', 'Basic abc']) {
      const response = await gql(api, '{ health { status } }', { authorization });
      expect(response.status).toBe(401);
      expect(response.body.data).toBeUndefined();
      expect(response.errors).toEqual([
        { message: 'Invalid API key', extensions: { code: 'UNAUTHENTICATED' } },
      ]);
    }
  });

  test("a key without the field's scope is FORBIDDEN naming the scope", async () => {
    const { key } = await newAccount(api.env, 'poster_only', ['post']);
    const read = await gql(api, '{ viewer { handle } }', { key });
    expect(read.errors?.[0]).toMatchObject({
      message: "API key lacks the 'read' scope",
      extensions: { code: 'FORBIDDEN' },
    });
    const engage = await gql(api, 'mutation { follow(handle: "alice_gql") { followed } }', { key });
    expect(engage.errors?.[0]).toMatchObject({
      message: "API key lacks the 'engage' scope",
      extensions: { code: 'FORBIDDEN' },
    });
  });
});

describe('errors', () => {
  test('service errors keep their message and code; anything else is masked', () => {
    const masked = maskError(new Error('secret internal detail'), 'Unexpected error.');
    expect(masked.message).toBe('Unexpected error.');
    expect(JSON.stringify(masked)).not.toMatch(/secret/);
    const passed = maskError(new AppError('unavailable', 'The chain is not answering'), 'Unexpected error.');
    expect(passed).toMatchObject({
      message: 'The chain is not answering',
      extensions: { code: 'SERVICE_UNAVAILABLE' },
    });
  });
});

describe('rate limits', () => {
  let limited: Api | undefined;
  afterAll(() => closeApi(limited));

  test('GraphQL spends the REST bucket: the 4th viewer query past a read limit of 3 is RATE_LIMITED', async () => {
    // 60 reads per minute x 0.05 = 3.
    limited = await openApi({ RATE_LIMIT_MULTIPLIER: '0.05' });
    const { key } = await newAccount(limited.env, 'reader_g');
    // Windows are whole minutes: start the burst early in one so it cannot straddle two.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 55_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 50));
    for (let i = 0; i < 3; i++) {
      const allowed = await gql(limited, '{ viewer { handle } }', { key });
      expect(allowed.errors, `read ${i + 1}`).toBeUndefined();
    }
    const refused = await gql(limited, '{ viewer { handle } }', { key });
    expect(refused.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/^Rate limit exceeded: 3 read requests per window/),
      extensions: { code: 'RATE_LIMITED', retryAfterSeconds: expect.any(Number) },
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The REST twin spends from the same bucket.
    const rest = await fetch(`${limited.base}/api/v1/me`, { headers: { authorization: `Bearer ${key}` } });
    expect(rest.status).toBe(429);
  });
});
