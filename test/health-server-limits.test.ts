import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { REQUEST_RECEIVE_TIMEOUT_MS } from '../src/api/error-response.js';
import { buildHealthServer, HEALTH_ANSWER_TIMEOUT_MS } from '../src/api/health-server.js';
import { dripping } from './support/dripping-client.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';
import { until } from './support/until.js';

/**
 * The /healthz and /metrics server of a process without the API role has the API server's receive
 * limits (issue 49): a request dripped in is answered 408 and closed, and a client that never reads
 * its answers is cut instead of holding its connection (and what waits to be sent on it) for good.
 */
let env: TestEnv;
let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  env = await openTestEnv({}, { chain: false });
  app = buildHealthServer({ ...env.app, logger: pino({ level: 'silent' }) });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  port = Number(new URL(base).port);
});
afterAll(async () => {
  await app?.close();
  await env?.close();
});

/** A connection to the health server, and the server's end of it. */
async function connectBoth(): Promise<{ client: Socket; server: Socket }> {
  const accepted: Socket[] = [];
  const onConnection = (socket: Socket) => accepted.push(socket);
  app.server.on('connection', onConnection);
  const client = connect(port, '127.0.0.1');
  await new Promise((resolve) => client.once('connect', resolve));
  const server = await until(
    'the server accepted it',
    () => Promise.resolve(accepted.find((socket) => socket.remotePort === client.localPort)),
    (socket) => socket !== undefined,
    5_000,
  );
  app.server.off('connection', onConnection);
  return { client, server: server! };
}

describe('the health server’s limits', () => {
  test.concurrent(
    `headers dripped a byte every 1.5 s are answered 408 and closed within ${REQUEST_RECEIVE_TIMEOUT_MS / 1000}-12.5 s`,
    async ({ expect }) => {
      const outcome = await dripping(
        port,
        `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`,
        'x-slow: '.repeat(20),
        1_500,
      );
      expect(outcome.status).toBe(408);
      expect(outcome.body).toEqual({
        error: 'request_timeout',
        message: `The request (headers and body) did not arrive within ${REQUEST_RECEIVE_TIMEOUT_MS / 1000} s`,
      });
      const inTime = (ms: number) => ms >= REQUEST_RECEIVE_TIMEOUT_MS - 500 && ms <= 12_500;
      expect(outcome.answeredAfterMs, 'answered').toSatisfy(inTime);
      expect(outcome.closedAfterMs, 'closed').toSatisfy(inTime);
    },
    30_000,
  );

  test.concurrent(
    `a client that sends 2,000 /metrics requests and never reads the answers is cut ${HEALTH_ANSWER_TIMEOUT_MS / 1000} s after an answer waits`,
    async ({ expect }) => {
      const size = Buffer.byteLength(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      // Far more than the kernel's buffers take on loopback: the server is left with answers to send.
      const count = 2_000;
      expect(size * count).toBeGreaterThan(20_000_000);
      const { client: socket, server } = await connectBoth();
      socket.pause();
      socket.on('error', () => {});
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      const opened = performance.now();
      socket.write(`GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`.repeat(count));
      await until(
        'the connection cut',
        () => Promise.resolve(server.destroyed),
        (destroyed) => destroyed,
        HEALTH_ANSWER_TIMEOUT_MS + 10_000,
      );
      const cutAfterMs = performance.now() - opened;
      console.log(`cut after ${(cutAfterMs / 1000).toFixed(1)} s`);
      expect(cutAfterMs).toBeGreaterThan(HEALTH_ANSWER_TIMEOUT_MS - 500);
      // Read at last: fewer answers than asked for, then the end of the connection.
      let received = 0;
      socket.on('data', (chunk: Buffer) => {
        received += chunk.length;
      });
      socket.resume();
      await Promise.race([closed, sleep(10_000)]);
      expect(socket.readableEnded || socket.destroyed, 'closed by the server').toBe(true);
      expect(received).toBeLessThan(size * count);
    },
    40_000,
  );

  test.concurrent('a client that reads is answered as usual', async ({ expect }) => {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/^ledgerfeed_event_stream_followers 0$/m);
  });
});
