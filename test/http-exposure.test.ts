import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { HttpExposure } from '../src/app/api-deps.js';
import { buildServer } from '../src/api/server.js';
import { httpExposureOf } from '../src/app/http-exposure.js';
import { loadConfig } from '../src/config/index.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import type { Scope } from '../src/domain/auth/api-key.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import type { HealthReport } from '../src/domain/health/health.service.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * What the HTTP server shows to anyone without a key (issue 20): the health report costs at most
 * one round of probes per interval and names no internal host, /metrics is not public, /graphql
 * reads no multipart body, CORS answers listed origins only and GraphiQL is off in production.
 */
let env: TestEnv;
let server: FastifyInstance;
const servers: FastifyInstance[] = [];

/** A server over the same app with other exposure settings (or another health check). */
async function serverWith(changes: {
  exposure?: Partial<HttpExposure>;
  checkHealth?: () => Promise<HealthReport>;
}) {
  const built = await buildServer(
    {
      ...env.app,
      ...(changes.checkHealth ? { checkHealth: changes.checkHealth } : {}),
      exposure: { ...env.app.exposure, ...changes.exposure },
    },
    { queueBoard: false },
  );
  servers.push(built);
  await built.ready();
  return built;
}

/** Health-check runs so far: each run probes all four dependencies once. */
async function healthRuns(): Promise<number> {
  const metric = await env.app.metrics.healthChecks.get();
  return metric.values.reduce((sum, { value }) => sum + value, 0);
}

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
  server = await buildServer(env.app, { queueBoard: false });
  await server.ready();
});
afterAll(async () => {
  for (const built of servers) await built.close();
  await server?.close();
  await env?.close();
});

describe('health', () => {
  test('a flood of /healthz and aliased GraphQL `health` selections runs the probes once', async () => {
    const before = await healthRuns();
    // Under the operation limits (query-limits.ts): each alias would be one run without the cache.
    const aliases = Array.from({ length: 8 }, (_, i) => `h${i}: health { status }`).join(' ');
    const [graphql, ...flood] = await Promise.all([
      server.inject({ method: 'POST', url: '/graphql', payload: { query: `{ ${aliases} }` } }),
      ...Array.from({ length: 200 }, () => server.inject('/healthz')),
    ]);
    expect(graphql.statusCode, graphql.body).toBe(200);
    const data = graphql.json<{ data: Record<string, { status: string }> }>().data;
    expect(Object.values(data).every((h) => h.status === 'ok')).toBe(true);
    expect(flood.every((r) => r.statusCode === 200)).toBe(true);
    // One run, or two if the 2 s report aged out while the burst was being answered.
    const runs = (await healthRuns()) - before;
    expect(runs).toBeLessThanOrEqual(2);
    const reports = new Set(flood.map((r) => r.json<{ checked_at: string }>().checked_at));
    expect(reports.size).toBeLessThanOrEqual(2);
  });

  test("a dependency's error detail is shown to operators only, never on /healthz", async () => {
    const detail = 'connect ECONNREFUSED 10.20.30.40:5432 (postgres://lf:pw@db.internal/lf)';
    const down: HealthReport = {
      status: 'down',
      checkedAt: new Date(),
      dependencies: [
        { name: 'postgres', source: 'external', status: 'down', latencyMs: 3, error: 'probe failed', detail },
      ],
    };
    const failing = await serverWith({ checkHealth: () => Promise.resolve(down) });
    const healthz = await failing.inject('/healthz');
    expect(healthz.statusCode).toBe(503);
    expect(healthz.json()).toMatchObject({
      status: 'down',
      dependencies: { postgres: { status: 'down', latency_ms: 3, error: 'probe failed' } },
    });
    expect(healthz.body).not.toMatch(/10\.20\.30\.40|db\.internal/);

    const query = '{ health { dependencies { name status error } } }';
    const anonymous = await failing.inject({ method: 'POST', url: '/graphql', payload: { query } });
    expect(anonymous.json()).toEqual({
      data: { health: { dependencies: [{ name: 'postgres', status: 'down', error: 'probe failed' }] } },
    });

    const asRole = async (role: 'user' | 'admin' | 'finance', scopes?: Scope[]) => {
      // Handles are at most 20 characters: a scope's initial each.
      const handle = `hx_${role}${scopes ? `_${scopes.map((scope) => scope[0]).join('')}` : ''}`;
      const account = await createAccount(env.app, { handle, role });
      const { key } = await createApiKey(env.app.apiKeys, account.id, scopes);
      const response = await failing.inject({
        method: 'POST',
        url: '/graphql',
        headers: { authorization: `Bearer ${key}` },
        payload: { query },
      });
      return response.json<{ data: { health: { dependencies: Array<{ error: string }> } } }>().data.health
        .dependencies[0]?.error;
    };
    expect(await asRole('user')).toBe('probe failed');
    expect(await asRole('admin')).toBe(detail);
    // The role shows the detail only through a key holding `read`, as the finance fields ask.
    expect(await asRole('finance', ['read'])).toBe(detail);
    expect(await asRole('finance', ['engage'])).toBe('probe failed');
    expect(await asRole('admin', ['engage', 'post', 'send'])).toBe('probe failed');
  });
});

describe('/metrics', () => {
  test('without METRICS_TOKEN it answers loopback clients only, and none that came through a proxy', async () => {
    expect((await server.inject({ url: '/metrics', remoteAddress: '127.0.0.1' })).statusCode).toBe(200);
    const remote = await server.inject({ url: '/metrics', remoteAddress: '203.0.113.9' });
    expect(remote.statusCode).toBe(403);
    expect(remote.json()).toMatchObject({ error: 'forbidden' });
    expect(remote.body).not.toMatch(/ledgerfeed_/);
    const proxied = await server.inject({
      url: '/metrics',
      remoteAddress: '127.0.0.1',
      headers: { 'x-forwarded-for': '203.0.113.9' },
    });
    expect(proxied.statusCode).toBe(403);
  });

  test('with METRICS_TOKEN it asks every client for the token', async () => {
    const token = 'metrics-token-0123456789';
    const guarded = await serverWith({ exposure: { metricsToken: token } });
    const none = await guarded.inject({ url: '/metrics', remoteAddress: '127.0.0.1' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ error: 'unauthorized' });
    const wrong = await guarded.inject({ url: '/metrics', headers: { authorization: `Bearer ${token}x` } });
    expect(wrong.statusCode).toBe(401);
    const right = await guarded.inject({
      url: '/metrics',
      remoteAddress: '198.51.100.4',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(right.statusCode).toBe(200);
    expect(right.body).toMatch(/ledgerfeed_http_request_duration_seconds/);
  });
});

describe('/graphql request bodies', () => {
  test('a 2 MB multipart body without a key is refused at once, unread and unexecuted', async () => {
    const listening = await serverWith({});
    const base = await listening.listen({ port: 0, host: '127.0.0.1' });
    const boundary = 'x-boundary';
    const operations = JSON.stringify({ query: '{ __typename }' });
    const body =
      `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${operations}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="padding"\r\n\r\n${'x'.repeat(2 * 1024 * 1024)}\r\n` +
      `--${boundary}--\r\n`;
    const started = performance.now();
    const response = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    expect(response.status).toBe(415);
    expect(await response.json()).toEqual({
      error: 'unsupported_media_type',
      message: 'Send the body as application/json',
    });
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe('CORS and GraphiQL', () => {
  const preflight = (target: FastifyInstance, origin: string) =>
    target.inject({
      method: 'OPTIONS',
      url: '/graphql',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });

  test('production defaults: no origin allowed, no GraphiQL', async () => {
    const production = httpExposureOf(
      loadConfig({ NODE_ENV: 'production', WALLET_MASTER_KEY: 'ab'.repeat(32) }),
    );
    expect(production).toEqual({ corsOrigins: [], metricsToken: undefined, graphiql: false });
    const closed = await serverWith({ exposure: production });
    const answer = await preflight(closed, 'https://evil.example');
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
    const query = await closed.inject({
      method: 'POST',
      url: '/graphql',
      headers: { origin: 'https://evil.example' },
      payload: { query: '{ __typename }' },
    });
    expect(query.headers['access-control-allow-origin']).toBeUndefined();

    const page = await closed.inject({ url: '/graphql', headers: { accept: 'text/html' } });
    expect(page.body).not.toMatch(/graphiql/i);
    expect(page.headers['content-type']).not.toMatch(/text\/html/);
  });

  test('CORS_ORIGINS: a listed origin is allowed without credentials, any other is not', async () => {
    const exposure = httpExposureOf(
      loadConfig({ CORS_ORIGINS: 'https://app.example, https://admin.example/' }),
    );
    expect(exposure.corsOrigins).toEqual(['https://app.example', 'https://admin.example']);
    const listed = await serverWith({ exposure });
    const allowed = await preflight(listed, 'https://admin.example');
    expect(allowed.headers['access-control-allow-origin']).toBe('https://admin.example');
    expect(allowed.headers['access-control-allow-credentials']).toBeUndefined();
    const other = await preflight(listed, 'https://evil.example');
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('development: any origin (no credentials) and GraphiQL in a browser', async () => {
    expect(httpExposureOf(loadConfig({ NODE_ENV: 'development' }))).toMatchObject({
      corsOrigins: ['*'],
      graphiql: true,
    });
    const answer = await preflight(server, 'http://localhost:5173');
    expect(answer.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(answer.headers['access-control-allow-credentials']).toBeUndefined();
    const page = await server.inject({ url: '/graphql', headers: { accept: 'text/html' } });
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).toMatch(/graphiql/i);
  });

  test('a bad CORS_ORIGINS stops the process with a message naming it', () => {
    expect(() => loadConfig({ CORS_ORIGINS: 'app.example' })).toThrow(/CORS_ORIGINS: expected \* or/);
  });
});
