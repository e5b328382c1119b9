import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * An `api` process with no ClickHouse configured (split roles: the worker and indexer hold the
 * embedded chdb folder): analytics answer 503 `analytics_unavailable` naming CLICKHOUSE_URL,
 * /healthz reports ClickHouse `not_configured` and stays ok, everything else works.
 */
let env: TestEnv;
let server: FastifyInstance;
let financeKey: string;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true, clickhouse: false });
  await env.app.bootstrapChain();
  server = await buildServer(env.app, { queueBoard: false });
  const finance = await createAccount(env.app, { handle: 'books_keeper', role: 'finance' });
  financeKey = (await createApiKey(env.app.apiKeys, finance.id)).key;
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

describe('an api without ClickHouse', () => {
  test('/healthz: ClickHouse not_configured, the service ok', async () => {
    const response = await server.inject({ method: 'GET', url: '/healthz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      status: 'ok',
      dependencies: {
        clickhouse: { status: 'not_configured', source: 'none' },
        postgres: { status: 'up' },
      },
    });
  });

  test('REST and GraphQL analytics answer 503 analytics_unavailable naming CLICKHOUSE_URL', async () => {
    const rest = await server.inject({
      method: 'GET',
      url: '/api/v1/finance/reconciliation?date=2026-11-24',
      headers: { authorization: `Bearer ${financeKey}` },
    });
    expect(rest.statusCode).toBe(503);
    expect(rest.json()).toEqual({
      error: 'analytics_unavailable',
      message: expect.stringContaining('CLICKHOUSE_URL') as unknown,
    });
    const graphql = await server.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${financeKey}`, 'content-type': 'application/json' },
      payload: { query: '{ reconciliationSummary(from: "2026-11-20", to: "2026-11-24") { day } }' },
    });
    const body = graphql.json<{ errors?: Array<{ message: string; extensions?: { code?: string } }> }>();
    expect(body.errors?.[0]?.extensions?.code).toBe('ANALYTICS_UNAVAILABLE');
    expect(body.errors?.[0]?.message).toContain('CLICKHOUSE_URL');
  });

  test('everything else works: the feed and the own profile', async () => {
    const headers = { authorization: `Bearer ${financeKey}` };
    const feed = await server.inject({ method: 'GET', url: '/api/v1/feed?sort=latest', headers });
    expect(feed.statusCode).toBe(200);
    const me = await server.inject({ method: 'GET', url: '/api/v1/me', headers });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ handle: 'books_keeper' });
  });
});
