import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServer } from '../src/api/server.js';
import { AppError } from '../src/domain/errors.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let server: FastifyInstance;
beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  server = await buildServer(env.app);
  // Routes that fail on purpose, to see what a client gets when a handler throws.
  server.get('/api/v1/__test/app-error', () => {
    throw new AppError('insufficient_balance', 'Balance is $0.50; this costs $1.00');
  });
  server.get('/api/v1/__test/crash', () => {
    throw new Error('secret internal detail');
  });
  server.post('/api/v1/__test/echo', (request) => request.body);
  await server.ready();
});
afterAll(async () => {
  await server?.close();
  await env?.close();
});

describe('/healthz', () => {
  test('answers 200 with every dependency up, its latency and its source', async () => {
    const response = await server.inject('/healthz');
    expect(response.statusCode).toBe(200);
    const body = response.json<{
      status: string;
      dependencies: Record<string, { status: string; latency_ms: number }>;
    }>();
    expect(body.status).toBe('ok');
    expect(Object.keys(body.dependencies).sort()).toEqual(['clickhouse', 'postgres', 'redis', 'solana']);
    for (const dependency of Object.values(body.dependencies)) {
      expect(dependency.status).toBe('up');
      expect(dependency.latency_ms).toBeGreaterThanOrEqual(0);
    }
  });
});

describe('/metrics', () => {
  test('serves Prometheus text with request and dependency metrics', async () => {
    await server.inject('/healthz');
    const response = await server.inject('/metrics');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    expect(response.body).toMatch(/ledgerfeed_dependency_up\{dependency="postgres"\} 1/);
    expect(response.body).toMatch(
      /ledgerfeed_http_request_duration_seconds_count\{method="GET",route="\/healthz",status="200"\}/,
    );
    expect(response.body).toMatch(/ledgerfeed_process_cpu_seconds_total/);
  });
});

describe('GraphQL', () => {
  test('answers the health field', async () => {
    const response = await server.inject({
      method: 'POST',
      url: '/graphql',
      payload: { query: '{ health { status dependencies { name status } } }' },
    });
    expect(response.statusCode).toBe(200);
    const { data } = response.json<{
      data: { health: { status: string; dependencies: { name: string }[] } };
    }>();
    expect(data.health.status).toBe('ok');
    expect(data.health.dependencies.map((d) => d.name).sort()).toEqual([
      'clickhouse',
      'postgres',
      'redis',
      'solana',
    ]);
  });

  test('answers GET queries too (GraphQL over HTTP)', async () => {
    const response = await server.inject(`/graphql?query=${encodeURIComponent('{ health { status } }')}`);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ data: { health: { status: 'ok' } } });
  });

  test('a query for an unknown field is a GraphQL validation error, not a 500', async () => {
    const response = await server.inject({
      method: 'POST',
      url: '/graphql',
      headers: { accept: 'application/graphql-response+json' },
      payload: { query: '{ nope }' },
    });
    // GraphQL over HTTP: 400 for a request that fails validation under the new media type.
    expect(response.statusCode).toBe(400);
    expect(response.json<{ errors: { message: string }[] }>().errors[0]?.message).toMatch(
      /Cannot query field "nope"/,
    );
  });
});

describe('REST errors', () => {
  test('an unknown path is a JSON 404', async () => {
    const response = await server.inject('/api/v1/nothing-here?x=1');
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ error: 'not_found', message: 'No route for GET /api/v1/nothing-here' });
  });

  test('an AppError maps to its status and code', async () => {
    const response = await server.inject('/api/v1/__test/app-error');
    expect(response.statusCode).toBe(402);
    expect(response.json()).toEqual({
      error: 'insufficient_balance',
      message: 'Balance is $0.50; this costs $1.00',
    });
  });

  test('an unexpected error is a 500 with no internal detail', async () => {
    const response = await server.inject('/api/v1/__test/crash');
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: 'internal', message: 'Internal server error' });
    expect(response.body).not.toMatch(/secret|at .*\.ts/);
  });

  test('malformed JSON is a 400 with a JSON body', async () => {
    const response = await server.inject({
      method: 'POST',
      url: '/api/v1/__test/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{"content": ',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: 'invalid_request' });
  });

  test('a body over the limit is a 413 and a foreign content type a 415', async () => {
    const big = await server.inject({
      method: 'POST',
      url: '/api/v1/__test/echo',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ content: 'x'.repeat(70_000) }),
    });
    expect(big.statusCode).toBe(413);
    expect(big.json()).toMatchObject({ error: 'payload_too_large' });
    const xml = await server.inject({
      method: 'POST',
      url: '/api/v1/__test/echo',
      headers: { 'content-type': 'application/xml' },
      payload: '<a/>',
    });
    expect(xml.statusCode).toBe(415);
    expect(xml.json()).toMatchObject({ error: 'unsupported_media_type' });
  });
});
