import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { postGraphql } from './support/graphql.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

// Postgres `text` cannot hold U+0000: before the rules refused it, each of these reached the
// database and answered 500 `internal`.
const NUL = '\u0000';

let env: TestEnv;
let server: FastifyInstance;
let base: string;
let key: string;

beforeAll(async () => {
  env = await openTestEnv({ RATE_LIMIT_MULTIPLIER: '0' }, { chain: true });
  await env.app.bootstrapChain();
  server = await buildServer(env.app);
  base = await server.listen({ port: 0, host: '127.0.0.1' });
  const account = await createAccount(env.app, { handle: 'nul_writer' });
  await createAccount(env.app, { handle: 'nul_friend' });
  key = (await createApiKey(env.app.apiKeys, account.id)).key;
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

async function rest(method: string, path: string, body: unknown) {
  const response = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function gql(query: string, variables: Record<string, unknown>) {
  const response = await postGraphql(base, key, query, variables);
  return (await response.json()) as { errors?: Array<{ message: string; extensions?: { code?: string } }> };
}

describe('a NUL character in stored text is refused as bad input, never a 500', () => {
  test.each([
    ['post content', 'POST', '/posts', () => ({ type: 'post', content: `hello${NUL}world` })],
    // Validation comes before the parent is looked up: any post id will do.
    ['reply content', 'POST', '/posts', () => ({ type: 'reply', content: NUL, parent_id: randomUUID() })],
    ['display name', 'PATCH', '/me/profile', () => ({ display_name: `a${NUL}b` })],
    ['bio', 'PATCH', '/me/profile', () => ({ bio: `${NUL}` })],
    ['send memo', 'POST', '/send', () => ({ to_handle: 'nul_friend', amount_usd: 1, memo: `x${NUL}` })],
    ['send recipient', 'POST', '/send', () => ({ to_handle: `nul_friend${NUL}`, amount_usd: 1 })],
  ])('REST: %s', async (_name, method, path, body) => {
    const answer = await rest(method, path, body());
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_request');
    expect(String(answer.body.message)).toMatch(/NUL/);
  });

  test.each([
    [
      'createPost content',
      'mutation($c: String!) { createPost(input: { type: POST, content: $c }) { id } }',
      { c: `a${NUL}` },
    ],
    [
      'updateProfile bio',
      'mutation($b: String) { updateProfile(input: { bio: $b }) { handle } }',
      { b: `a${NUL}` },
    ],
    [
      'send memo',
      'mutation($m: String) { send(input: { toHandle: "nul_friend", amountUsd: "1", memo: $m }) { swapTx } }',
      { m: `a${NUL}` },
    ],
  ])('GraphQL: %s', async (_name, query, variables) => {
    const answer = await gql(query, variables);
    expect(answer.errors?.[0]?.message).toMatch(/NUL/);
    expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
