import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import pino from 'pino';
import { buildHealthServer } from '../src/api/health-server.js';
import { reportDraining } from '../src/domain/health/health.service.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/**
 * A process without the API role (a worker or indexer alone) serves /healthz and /metrics on its
 * own port: the same answers as the API's, with BullMQ queue depth by state.
 */
let env: TestEnv;
let draining = false;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: true });
});
afterAll(async () => {
  await env?.close();
});

function server() {
  return buildHealthServer({
    ...env.app,
    checkHealth: reportDraining(
      () => env.app.checkHealth(),
      () => draining,
    ),
    logger: pino({ level: 'silent' }),
  });
}

describe('the health server of a worker or indexer process', () => {
  test('/healthz reports every dependency, and draining (503) once stopping', async () => {
    const app = server();
    const ok = await app.inject({ method: 'GET', url: '/healthz' });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({
      status: 'ok',
      dependencies: { postgres: { status: 'up' }, redis: { status: 'up' }, clickhouse: { status: 'up' } },
    });
    draining = true;
    const stopping = await app.inject({ method: 'GET', url: '/healthz' });
    draining = false;
    expect(stopping.statusCode).toBe(503);
    expect(stopping.json()).toMatchObject({ status: 'draining' });
    await app.close();
  });

  test('/metrics counts queued jobs by queue and state at each scrape', async () => {
    const app = server();
    const scrape = async () => {
      const response = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '127.0.0.1' });
      expect(response.statusCode).toBe(200);
      return response.body;
    };
    const waiting = (body: string) =>
      Number(/^ledgerfeed_queue_jobs\{queue="payments",state="waiting"\} (\d+)$/m.exec(body)?.[1]);
    const before = waiting(await scrape());
    expect(before).toBeGreaterThanOrEqual(0);
    // No worker runs in this file: the jobs stay waiting.
    await env.app.payments.enqueue(`health-${Date.now()}-a`);
    await env.app.payments.enqueue(`health-${Date.now()}-b`);
    const body = await scrape();
    expect(waiting(body)).toBe(before + 2);
    expect(body).toMatch(/^ledgerfeed_queue_jobs\{queue="creator-fund",state="failed"\} 0$/m);
    expect(body).toMatch(/^ledgerfeed_dependency_up\{dependency="postgres"\} 1$/m);
    await app.close();
  });

  test('/metrics refuses a client from elsewhere; anything else is a JSON 404', async () => {
    const app = server();
    const remote = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.1.2.3' });
    expect(remote.statusCode).toBe(403);
    expect(remote.json()).toMatchObject({ error: 'forbidden' });
    const other = await app.inject({ method: 'POST', url: '/api/v1/posts' });
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({
      error: 'not_found',
      message: 'POST /api/v1/posts: this process serves /healthz and /metrics only (no api role)',
    });
    await app.close();
  });
});
