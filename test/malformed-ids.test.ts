import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { EXCEPTION_CURSOR_SCOPE } from '../src/app/analytics/analytics-reads.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { encodeSignedCursor } from '../src/domain/pagination/signed-cursor.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { missingVerdict } from './support/verdict-rows.js';

/**
 * An id that only looks like a UUID (36 hex digits and dashes, in any order) never reaches a
 * uuid cast: before, /avatars/------------------------------------.svg answered 500 to anyone,
 * without a key or a rate limit.
 */
let env: TestEnv;
let server: FastifyInstance;
let accountId: string;
let financeKey: string;

beforeAll(async () => {
  env = await openTestEnv({});
  server = await buildServer(env.app, { queueBoard: false });
  accountId = (await createAccount(env.app, { handle: 'avatar_owner' })).id;
  const finance = await createAccount(env.app, { handle: 'ids_books', role: 'finance' });
  financeKey = (await createApiKey(env.app.apiKeys, finance.id)).key;
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

const LOOKALIKES = [
  '------------------------------------',
  '0123456789abcdef0123456789abcdef0123',
  '01234567-89ab-cdef-0123456789abcdef-',
  'abcdef01-2345-6789-abcd-ef012345678-',
  '-abcdef0-1234-5678-9abc-def012345678',
];

describe('avatars', () => {
  test.each(LOOKALIKES)('/avatars/%s.svg is 404 JSON, not 500', async (id) => {
    expect(id).toHaveLength(36);
    const response = await server.inject({ method: 'GET', url: `/avatars/${id}.svg` });
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({ error: 'not_found', message: 'No such avatar' });
  });

  test("an account's avatar still answers, and an unknown UUID is 404", async () => {
    const own = await server.inject({ method: 'GET', url: `/avatars/${accountId}.svg` });
    expect(own.statusCode).toBe(200);
    expect(own.headers['content-type']).toBe('image/svg+xml');
    expect(own.body).toContain('aria-label="A"');
    const unknown = await server.inject({
      method: 'GET',
      url: '/avatars/00000000-0000-4000-8000-000000000000.svg',
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: 'not_found', message: 'No such avatar' });
  });
});

const EXCEPTIONS = `query ($after: String) {
  reconciliationExceptions(first: 1, after: $after) {
    edges { cursor node { signature } } pageInfo { hasNextPage endCursor } } }`;

async function financeGql(query: string, variables: Record<string, unknown>) {
  const response = await server.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${financeKey}`, 'content-type': 'application/json' },
    payload: { query, variables },
  });
  expect(response.statusCode).toBe(200);
  return response.json<{ data?: any; errors?: unknown[] }>();
}

describe('reconciliation cursors (GraphQL, finance role)', () => {
  test('the cursors it gives out page through every exception', async () => {
    const row = (movementId: string, signature: string, day: string) =>
      missingVerdict(movementId, signature, day, '2026-11-25 00:00:00.000');
    await env.app.clickhouse.insertRows('reconciliation', [
      row('0a0e5a5e-1111-4111-8111-111111111111', 'sig-a', '2026-11-24'),
      row('fb0e5a5e-2222-4222-8222-222222222222', 'sig-b', '2026-11-24'),
      row('0a0e5a5e-3333-4333-8333-333333333333', 'sig-c', '2026-02-28'),
    ]);
    const seen: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 5; page++) {
      const { data, errors } = await financeGql(EXCEPTIONS, { after });
      expect(errors).toBeUndefined();
      const connection = data.reconciliationExceptions as {
        edges: Array<{ node: { signature: string } }>;
        pageInfo: { hasNextPage: boolean; endCursor: string };
      };
      seen.push(...connection.edges.map((edge) => edge.node.signature));
      if (!connection.pageInfo.hasNextPage) break;
      after = connection.pageInfo.endCursor;
    }
    expect(seen).toEqual(['sig-b', 'sig-a', 'sig-c']);
  });

  test.each([
    ['2026-11-24', '------------------------------------', 'sig'],
    ['2026-11-24', '0123456789abcdef0123456789abcdef0123', 'sig'],
    ['2026-13-45', '00000000-0000-4000-8000-000000000000', 'sig'],
    ['2026-02-30', '00000000-0000-4000-8000-000000000000', 'sig'],
  ])('a crafted after [%s, %s] is BAD_USER_INPUT naming after', async (day, movementId, signature) => {
    // Signed with the deployment's secret (it may be a public default): the values are checked too.
    const after = encodeSignedCursor(env.app.cursorSecret, EXCEPTION_CURSOR_SCOPE, [
      day,
      movementId,
      signature,
    ]);
    const body = await financeGql(EXCEPTIONS, { after });
    expect(body.errors).toEqual([
      expect.objectContaining({
        message: 'after is not a cursor this API gave out',
        extensions: { code: 'BAD_USER_INPUT', field: 'after' },
      }),
    ]);
  });
});
