import { connect } from 'node:net';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { REQUEST_RECEIVE_TIMEOUT_MS } from '../src/api/error-response.js';
import { dripping, firstAnswer } from './support/dripping-client.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * A request must arrive, headers and body, within REQUEST_RECEIVE_TIMEOUT_MS (issue 37): a client
 * dripping a byte every second or two held its connection forever, before any key was checked.
 * Answering may take as long as it takes: only receiving the request counts.
 */
let h: ServiceHarness;
let member: Member;
let port: number;

const HEALTH = JSON.stringify({ query: '{ health { status } }' });
const POST = JSON.stringify({ type: 'post', content: 'dripped' });

/** A request head for `body` (sent separately), with the key when given. */
function headOf(path: string, body: string, key?: string): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    (key ? `Authorization: Bearer ${key}\r\n` : '') +
    '\r\n'
  );
}

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  port = Number(new URL(h.base).port);
  member = await h.member('rt_member', 20_000_000n);
});
afterAll(async () => {
  await h?.close();
});

// Concurrent: each waits out the limit.
describe('receiving a request', () => {
  test.concurrent(
    `a body dripping a byte every 1.5 s is answered 408 and closed within ${REQUEST_RECEIVE_TIMEOUT_MS / 1000}-12 s, with or without a key, on /graphql and on POST /api/v1/posts; so are dripping headers`,
    async ({ expect }) => {
      const [graphqlKeyless, graphqlKeyed, postKeyless, postKeyed, slowHeaders] = await Promise.all([
        dripping(port, headOf('/graphql', HEALTH), HEALTH, 1_500),
        dripping(port, headOf('/graphql', HEALTH, member.key), HEALTH, 1_500),
        dripping(port, headOf('/api/v1/posts', POST), POST, 1_500),
        dripping(port, headOf('/api/v1/posts', POST, member.key), POST, 1_500),
        // Headers that never end: a header line one byte at a time.
        dripping(port, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`, 'x-slow: '.repeat(20), 1_500),
      ]);
      const inTime = (ms: number) => ms >= REQUEST_RECEIVE_TIMEOUT_MS - 500 && ms <= 12_500;
      for (const outcome of [graphqlKeyless, graphqlKeyed, postKeyed, slowHeaders]) {
        expect(outcome).toMatchObject({
          status: 408,
          body: {
            error: 'request_timeout',
            message: `The request (headers and body) did not arrive within ${REQUEST_RECEIVE_TIMEOUT_MS / 1000} s`,
          },
        });
        expect(outcome.answeredAfterMs, 'answered').toSatisfy(inTime);
      }
      // REST checks the key before it reads a body: a keyless POST is refused at once, and its
      // connection is closed all the same when the body does not arrive.
      expect(postKeyless).toMatchObject({ status: 401, body: { error: 'unauthorized' } });
      expect(postKeyless.answeredAfterMs).toBeLessThan(2_000);
      for (const outcome of [graphqlKeyless, graphqlKeyed, postKeyless, postKeyed, slowHeaders]) {
        expect(outcome.closedAfterMs, 'closed').toSatisfy(inTime);
      }
    },
    30_000,
  );

  test.concurrent(
    'a body that arrives slowly but within the limit is answered as usual',
    async ({ expect }) => {
      // 35 bytes at one every 150 ms: about 5 s.
      const outcome = await new Promise<{ status: number; body: unknown }>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        let received = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => {
          received += chunk;
          const answer = firstAnswer(received);
          if (answer.status && typeof answer.body !== 'string') {
            socket.destroy();
            resolve(answer);
          }
        });
        socket.write(headOf('/graphql', HEALTH));
        let sent = 0;
        const timer = setInterval(() => {
          socket.write(HEALTH[sent++]!);
          if (sent === HEALTH.length) clearInterval(timer);
        }, 150);
      });
      expect(outcome.status).toBe(200);
      expect(outcome.body).toMatchObject({ data: { health: { status: expect.any(String) } } });
    },
  );

  test.concurrent(
    `an event stream held past ${REQUEST_RECEIVE_TIMEOUT_MS / 1000} s still delivers, and a keep-alive connection idle that long still serves its next request`,
    async ({ expect }) => {
      const abort = new AbortController();
      const stream = await fetch(`${h.base}/graphql`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${member.key}`,
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify({ query: 'subscription { postCreated { id } }' }),
        signal: abort.signal,
      });
      expect(stream.status).toBe(200);
      const events = stream.body!.pipeThrough(new TextDecoderStream()).getReader();

      // One connection: a request, then nothing for longer than the limit, then another.
      const socket = connect(port, '127.0.0.1');
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (received += chunk));
      const ask = () => socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      try {
        ask();
        await expect.poll(() => firstAnswer(received).status).toBe(200);
        received = '';
        await new Promise((resolve) => setTimeout(resolve, REQUEST_RECEIVE_TIMEOUT_MS + 2_000));
        ask();
        await expect.poll(() => firstAnswer(received).status).toBe(200);

        // A normal paid write, and the stream opened 12 s ago hears of it.
        const created = await h.call(member, 'POST', '/posts', { type: 'post', content: 'after the wait' });
        expect(created.status).toBe(201);
        const { id } = (await created.json()) as { id: string };
        let text = '';
        while (!text.includes(id)) {
          const chunk = await events.read();
          if (chunk.done) throw new Error(`stream ended; received: ${text}`);
          text += chunk.value;
        }
      } finally {
        socket.destroy();
        abort.abort();
      }
    },
    40_000,
  );
});
