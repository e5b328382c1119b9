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
