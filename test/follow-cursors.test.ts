import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { postGraphql } from './support/graphql.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * The cursors of `followers` and `following` are signed like every other cursor: before, a crafted
 * `after` (base64url JSON of any time and any "id") reached Postgres's uuid comparison and answered
 * "Unexpected error". Follow lists exist in GraphQL only (REST has no follow list).
 */
let env: TestEnv;
let server: FastifyInstance;
let base: string;
let star: { id: string; key: string };
let fan: { id: string; key: string };
/** The star's followers, newest follow first. */
const followers: string[] = [];

beforeAll(async () => {
  env = await openTestEnv({}, { clickhouse: false });
  server = await buildServer(env.app, { queueBoard: false });
  base = await server.listen({ port: 0, host: '127.0.0.1' });
  const account = await createAccount(env.app, { handle: 'cursor_star' });
  star = { id: account.id, key: (await createApiKey(env.app.apiKeys, account.id)).key };
  const fanAccount = await createAccount(env.app, { handle: 'cursor_fan' });
  fan = { id: fanAccount.id, key: (await createApiKey(env.app.apiKeys, fanAccount.id)).key };
  const ids = [fan.id];
  for (let i = 0; i < 4; i++) ids.push((await createAccount(env.app, { handle: `cursor_f${i}` })).id);
  // Five follows of the star 100 µs apart, all in one millisecond, then the fan follows two more:
  // a cursor cut to milliseconds would skip or repeat the follows sharing a millisecond.
  const { rows } = await sql<{ handle: string }>`
    INSERT INTO follows (follower_id, followee_id, created_at)
    SELECT f.id, ${star.id}::uuid, '2026-11-20T10:00:00.123000Z'::timestamptz + f.n * interval '100 microseconds'
      FROM unnest(${ids}::uuid[]) WITH ORDINALITY AS f(id, n)
    RETURNING (SELECT handle FROM accounts WHERE id = follower_id) AS handle`.execute(env.app.db);
  followers.push(...rows.map((row) => row.handle).reverse());
  await sql`INSERT INTO follows (follower_id, followee_id)
            SELECT ${fan.id}::uuid, id FROM accounts WHERE handle IN ('cursor_f0', 'cursor_f1')`.execute(
    env.app.db,
  );
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

async function gql(key: string, query: string, variables: Record<string, unknown> = {}) {
  const response = await postGraphql(base, key, query, variables);
  const body = (await response.json()) as {
    data?: Record<string, any> | null;
    errors?: Array<{ message: string; path?: string[]; extensions?: { code?: string } }>;
  };
  return { status: response.status, ...body };
}

interface Connection {
  edges: Array<{ cursor: string; node: { handle: string } }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

const FOLLOWERS = `query ($handle: String!, $first: Int, $after: String) {
  user(handle: $handle) { followers(first: $first, after: $after) {
    edges { cursor node { handle } } pageInfo { hasNextPage endCursor } } } }`;
const FOLLOWING = FOLLOWERS.replace('followers(', 'following(');

async function page(list: string, handle: string, first: number, after?: string) {
  const answer = await gql(star.key, list, { handle, first, ...(after === undefined ? {} : { after }) });
  const side = list === FOLLOWERS ? 'followers' : 'following';
  return { ...answer, connection: answer.data?.user?.[side] as Connection | undefined };
}

/** An unsigned cursor in the old format: base64url JSON of [time, id]. */
const crafted = (at: string, id: string) => Buffer.from(JSON.stringify([at, id])).toString('base64url');

describe('follow lists page with signed cursors', () => {
  test('paging one follow at a time walks every follower once, in order, even within a millisecond', async () => {
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const { errors, connection } = await page(FOLLOWERS, 'cursor_star', 2, after);
      expect(errors).toBeUndefined();
      seen.push(...connection!.edges.map((edge) => edge.node.handle));
      if (!connection!.pageInfo.hasNextPage) break;
      after = connection!.pageInfo.endCursor!;
      expect(after).toMatch(/^[\w-]+\.[\w-]{22}$/);
    }
    expect(seen).toEqual(followers);
    expect(seen).toHaveLength(5);

    const first = await page(FOLLOWING, 'cursor_fan', 1);
    const second = await page(FOLLOWING, 'cursor_fan', 1, first.connection!.pageInfo.endCursor!);
    expect(second.errors).toBeUndefined();
    const handles = [...first.connection!.edges, ...second.connection!.edges].map((edge) => edge.node.handle);
    expect(handles.sort()).toEqual(['cursor_f0', 'cursor_f1']);
  });

  const endCursorOf = async (list: string, handle: string) =>
    (await page(list, handle, 1)).connection!.pageInfo.endCursor!;
  /** [what, whose followers are asked for, the cursor passed as after] */
  const refusedCursors: Array<[string, string, () => string | Promise<string>]> = [
    [
      'a crafted unsigned cursor with a non-UUID id',
      'cursor_star',
      () => crafted('2026-11-20T10:00:00.123Z', '-'.repeat(36)),
    ],
    [
      'a crafted unsigned cursor with a real id',
      'cursor_star',
      () => crafted('2030-01-01T00:00:00.000Z', star.id),
    ],
    ['garbage', 'cursor_star', () => "'; SELECT 1; --"],
    ['an empty string', 'cursor_star', () => ''],
    [
      'a signed cursor whose payload was changed',
      'cursor_star',
      async () => {
        const [payload, mac] = (await endCursorOf(FOLLOWERS, 'cursor_star')).split('.') as [string, string];
        const [at] = JSON.parse(Buffer.from(payload, 'base64url').toString()) as [string, string];
        return `${crafted(at, '------------------------------------')}.${mac}`;
      },
    ],
    [
      'a signed cursor whose MAC was changed',
      'cursor_star',
      async () => {
        const cursor = await endCursorOf(FOLLOWERS, 'cursor_star');
        return `${cursor.slice(0, -2)}${cursor.at(-2) === 'A' ? 'B' : 'A'}${cursor.at(-1)}`;
      },
    ],
    ["another account's followers cursor", 'cursor_f1', () => endCursorOf(FOLLOWERS, 'cursor_star')],
    ["the same account's following cursor", 'cursor_fan', () => endCursorOf(FOLLOWING, 'cursor_fan')],
  ];

  test.each(refusedCursors)(
    'followers refuses %s as BAD_USER_INPUT naming after',
    async (_what, handle, cursorOf) => {
      const answer = await page(FOLLOWERS, handle, 2, await cursorOf());
      expect(answer.status).toBe(200);
      expect(answer.errors).toHaveLength(1);
      expect(answer.errors?.[0]).toMatchObject({
        message: 'after is not valid: pass a cursor from a previous page unchanged',
        path: ['user', 'followers'],
        extensions: { code: 'BAD_USER_INPUT', field: 'after' },
      });
    },
  );

  test('following refuses a crafted and a tampered cursor the same way', async () => {
    const followersCursor = (await page(FOLLOWERS, 'cursor_star', 1)).connection!.pageInfo.endCursor!;
    for (const cursor of [
      crafted('2026-11-20T10:00:00.123Z', '0123456789abcdef0123456789abcdef0123'),
      followersCursor,
    ]) {
      const answer = await page(FOLLOWING, 'cursor_star', 2, cursor);
      expect(answer.errors?.[0]).toMatchObject({
        path: ['user', 'following'],
        extensions: { code: 'BAD_USER_INPUT', field: 'after' },
      });
    }
    const viewer = await gql(
      fan.key,
      '{ viewer { following(first: 1, after: "eyJ4Ijoy") { edges { cursor } } } }',
    );
    expect(viewer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
