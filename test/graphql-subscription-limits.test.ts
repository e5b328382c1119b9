import { request } from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MAX_STREAMS_PER_ACCOUNT } from '../src/api/graphql/live-streams.js';
import { lookupIdOf } from '../src/domain/auth/api-key.js';
import { revokeApiKey } from '../src/domain/auth/api-keys.service.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * Subscriptions are held open for as long as a client likes (issue 20): a revoked key's streams
 * must end, and one account may not hold more than MAX_STREAMS_PER_ACCOUNT of them.
 */
let h: ServiceHarness;

const POST_CREATED = 'subscription { postCreated { id } }';

interface OpenStream {
  /** Resolves when the server ends the stream (or fails it): it delivers nothing more. */
  ended: Promise<void>;
  close(): void;
}

async function openStream(who: Member): Promise<OpenStream> {
  const abort = new AbortController();
  const response = await fetch(`${h.base}/graphql`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${who.key}`,
      'content-type': 'application/json',
      accept: 'text/event-stream',
    },
    body: JSON.stringify({ query: POST_CREATED }),
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const ended = (async () => {
    try {
      while (!(await reader.read()).done);
    } catch {
      // Cut by the server (or closed by the test): ended either way.
    }
  })();
  return { ended, close: () => abort.abort() };
}

/** One subscription request, as answered: a held stream, or a refusal with its parsed body. */
interface Attempt {
  accept: string | undefined;
  status: number;
  contentType: string | undefined;
  /** The refusal's body; undefined for a stream. */
  body?: unknown;
  /** Resolves when the response ends (a stream: when the server cuts it or the test closes it). */
  ended: Promise<void>;
  close(): void;
}

/**
 * A subscription as `who` with this Accept header, or none at all (node:http, since fetch always
 * sends one). A 200 is held open as a stream; anything else is read whole.
 */
function attempt(who: Member, accept: string | undefined): Promise<Attempt> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${who.key}`,
    'content-type': 'application/json',
  };
  if (accept !== undefined) headers.accept = accept;
  return new Promise((resolve, reject) => {
    const req = request(`${h.base}/graphql`, { method: 'POST', headers, agent: false }, (res) => {
      const status = res.statusCode ?? 0;
      const contentType = res.headers['content-type'];
      const ended = new Promise<void>((done) => res.once('close', done));
      const close = () => req.destroy();
      res.on('error', () => {}); // a cut stream: `ended` tells
      if (status === 200) {
        res.resume();
        resolve({ accept, status, contentType, ended, close });
        return;
      }
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.once('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: the assertion shows the text
        }
        resolve({ accept, status, contentType, body, ended, close });
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify({ query: POST_CREATED }));
  });
}

/** Subscribers of one live topic across every process, as Redis counts them. */
async function redisSubscribers(topic: string): Promise<number> {
  const app = h.env.app;
  const [, count] = (await app.redis.pubsub('NUMSUB', `${app.redisPrefix}:live:${topic}`)) as [
    string,
    number,
  ];
  return Number(count);
}

/** `promise`, or a failure after `ms`: a stream that never ends must fail the test, not hang it. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)),
  ]);
}

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
});
afterAll(async () => {
  await h?.close();
});

describe('a revoked key', () => {
  test('its open streams end when the key is revoked', async () => {
    const member = await h.member('sl_revoked', 0n);
    const stream = await openStream(member);
    await revokeApiKey(h.env.app.apiKeys, lookupIdOf(member.key)!, member.account.id);
    await within(stream.ended, 5_000, 'the stream did not end');
    const again = await fetch(`${h.base}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${member.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: POST_CREATED }),
    });
    expect(again.status).toBe(401);
  });

  test('its streams end even when no process was told (revoked straight in Postgres)', async () => {
    const member = await h.member('sl_silent', 0n);
    const stream = await openStream(member);
    await sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${lookupIdOf(member.key)!}`.execute(
      h.env.app.db,
    );
    // The periodic recheck (2 s) after the key cache's time-to-live (5 s) at the latest.
    await within(stream.ended, 15_000, 'the stream did not end');
  });
});

describe('streams per account', () => {
  test(`the ${MAX_STREAMS_PER_ACCOUNT + 1}th open stream is refused with 429; closing one frees a slot`, async () => {
    const member = await h.member('sl_many', 0n);
    const streams = await Promise.all(
      Array.from({ length: MAX_STREAMS_PER_ACCOUNT }, () => openStream(member)),
    );
    try {
      const refused = await fetch(`${h.base}/graphql`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${member.key}`,
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify({ query: POST_CREATED }),
      });
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({
        error: 'rate_limited',
        message: expect.stringMatching(/at most 5 open subscriptions/),
      });
      // Another account is not affected.
      const other = await openStream(await h.member('sl_other', 0n));
      other.close();

      streams.pop()!.close();
      await expect
        .poll(
          async () => {
            const retry = await openStream(member).catch(() => undefined);
            retry?.close();
            return retry !== undefined;
          },
          { timeout: 10_000, interval: 200 },
        )
        .toBe(true);
    } finally {
      for (const stream of streams) stream.close();
    }
  });
});

describe('streams per account, whatever the Accept header', () => {
  test('eight subscriptions with mixed Accept headers hold at most five streams, the rest are refused with a JSON 4xx, and revoking the key ends every open one', async () => {
    const member = await h.member('sl_mixed', 0n);
    const accepts = ['text/event-stream', '*/*', undefined, 'multipart/mixed'];
    const attempts: Attempt[] = [];
    try {
      // One after another, so which are refused is known: Yoga streams subscriptions as server-sent
      // events only (`*/*` and no header mean any type), so multipart/mixed is refused with 406;
      // the sixth stream, whatever it asked for, with 429.
      for (const accept of [...accepts, ...accepts]) attempts.push(await attempt(member, accept));
      expect(attempts.map(({ accept, status }) => `${accept} ${status}`)).toEqual([
        'text/event-stream 200',
        '*/* 200',
        'undefined 200',
        'multipart/mixed 406',
        'text/event-stream 200',
        '*/* 200',
        'undefined 429',
        'multipart/mixed 429',
      ]);
      const open = attempts.filter(({ status }) => status === 200);
      expect(open).toHaveLength(MAX_STREAMS_PER_ACCOUNT);
      for (const stream of open) expect(stream.contentType).toMatch(/^text\/event-stream/);
      for (const refused of attempts.filter(({ status }) => status !== 200)) {
        expect(refused.contentType).toMatch(/^application\/json/);
        expect(refused.body).toEqual({ error: expect.any(String), message: expect.any(String) });
      }
      expect(attempts[3]!.body).toEqual({
        error: 'not_acceptable',
        message: expect.stringMatching(/Accept: text\/event-stream/),
      });
      expect(attempts[6]!.body).toEqual({
        error: 'rate_limited',
        message: expect.stringMatching(/at most 5 open subscriptions/),
      });

      await revokeApiKey(h.env.app.apiKeys, lookupIdOf(member.key)!, member.account.id);
      await within(Promise.all(open.map(({ ended }) => ended)), 5_000, 'not every stream ended');
      // Nothing was left subscribed, not even by the refused multipart request.
      await expect.poll(() => redisSubscribers('post-created'), { timeout: 5_000 }).toBe(0);
    } finally {
      for (const stream of attempts) stream.close();
    }
  });
});
