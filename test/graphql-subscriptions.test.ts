import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createLiveEvents, type LiveEvents } from '../src/adapters/redis/live-events.js';
import { buildServer } from '../src/api/server.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * GraphQL subscriptions over SSE (issue #7): postCreated and postCountsChanged, fed by the REST
 * write path through Redis pub/sub, so a subscriber on one API process hears writes on another.
 */
let h: ServiceHarness;
let alice: Member;
let bob: Member;

type Json = Record<string, any>;

interface EventStream {
  /** The next `data:` event of the stream, parsed. */
  next(): Promise<Json>;
  close(): void;
}

/** Opens a subscription as `who` on `base` and waits for the response headers (it is live then). */
async function subscribe(
  base: string,
  who: Member,
  query: string,
  variables: Json = {},
): Promise<EventStream> {
  const abort = new AbortController();
  const response = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${who.key}`,
      'content-type': 'application/json',
      accept: 'text/event-stream',
    },
    body: JSON.stringify({ query, variables }),
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  return {
    next: async () => {
      for (;;) {
        const end = buffered.indexOf('\n\n');
        if (end >= 0) {
          const block = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trim())
            .join('\n');
          if (data) return JSON.parse(data) as Json;
          continue; // a keep-alive comment or an event without data
        }
        const chunk = await reader.read();
        if (chunk.done) throw new Error(`stream ended; unparsed: ${buffered}`);
        buffered += chunk.value;
      }
    },
    close: () => abort.abort(),
  };
}

/** `promise`, or a failure after `ms` (a missing event must fail the test, not hang it). */
function within<T>(promise: Promise<T>, ms = 10_000): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no event in ${ms}ms`)), ms)),
  ]);
}

async function restPost(who: Member, body: Record<string, string>): Promise<string> {
  const response = await h.call(who, 'POST', '/posts', body);
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
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

const POST_CREATED = `subscription { postCreated { id type content author { handle } parent { id } } }`;
const COUNTS = `subscription ($id: ID!) {
  postCountsChanged(id: $id) { id likeCount replyCount repostCount viewerHasLiked }
}`;

beforeAll(async () => {
  h = await openServiceHarness({ RATE_LIMIT_MULTIPLIER: '0' });
  alice = await h.member('gs_alice', 20_000_000n);
  bob = await h.member('gs_bob', 20_000_000n);
});

afterAll(async () => {
  await h?.close();
});

describe('postCreated', () => {
  test('a post created through REST arrives as an SSE event with its id and content', async () => {
    const stream = await subscribe(h.base, bob, POST_CREATED);
    try {
      const id = await restPost(alice, { type: 'post', content: 'live hello' });
      const event = await within(stream.next());
      expect(event.errors).toBeUndefined();
      expect(event.data.postCreated).toEqual({
        id,
        type: 'POST',
        content: 'live hello',
        author: { handle: 'gs_alice' },
        parent: null,
      });

      const replyId = await restPost(bob, { type: 'reply', content: 'live reply', parent_id: id });
      const reply = await within(stream.next());
      expect(reply.data.postCreated).toMatchObject({ id: replyId, type: 'REPLY', parent: { id } });
    } finally {
      stream.close();
    }
    // The client went away: the Redis subscription ends with it.
    await expect.poll(() => redisSubscribers('post-created')).toBe(0);
  });

  test('needs an API key with `read`', async () => {
    const response = await fetch(`${h.base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: POST_CREATED }),
    });
    const text = await response.text();
    expect(text).toContain('UNAUTHENTICATED');
  });
});

describe('postCountsChanged', () => {
  test('a REST like, a reply and a repost each send the post with its new counts', async () => {
    const id = await restPost(alice, { type: 'post', content: 'count me' });
    const stream = await subscribe(h.base, bob, COUNTS, { id });
    try {
      expect((await h.call(bob, 'POST', `/posts/${id}/like`)).status).toBe(200);
      const liked = await within(stream.next());
      expect(liked.errors).toBeUndefined();
      expect(liked.data.postCountsChanged).toEqual({
        id,
        likeCount: 1,
        replyCount: 0,
        repostCount: 0,
        viewerHasLiked: true,
      });

      // Liking again changes nothing and sends nothing; the reply after it is the next event.
      expect((await h.call(bob, 'POST', `/posts/${id}/like`)).status).toBe(200);
      await restPost(bob, { type: 'reply', content: 'counted', parent_id: id });
      const replied = await within(stream.next());
      expect(replied.data.postCountsChanged).toMatchObject({ likeCount: 1, replyCount: 1 });

      expect((await h.call(bob, 'POST', `/posts/${id}/repost`)).status).toBe(201);
      const reposted = await within(stream.next());
      expect(reposted.data.postCountsChanged).toMatchObject({ repostCount: 1 });

      expect((await h.call(bob, 'DELETE', `/posts/${id}/like`)).status).toBe(200);
      const unliked = await within(stream.next());
      expect(unliked.data.postCountsChanged).toMatchObject({ likeCount: 0, viewerHasLiked: false });
    } finally {
      stream.close();
    }
  });

  test('an unknown post is NOT_FOUND', async () => {
    const stream = await subscribe(h.base, bob, COUNTS, { id: '00000000-0000-4000-8000-000000000000' });
    try {
      const event = await within(stream.next());
      expect(event.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    } finally {
      stream.close();
    }
  });
});

describe('across API processes', () => {
  let second: FastifyInstance;
  let secondEvents: LiveEvents;
  let secondBase: string;

  beforeAll(async () => {
    const app = h.env.app;
    // Its own subscriber connection and listeners: only Redis connects it to the first server.
    secondEvents = createLiveEvents({
      url: app.stack.redis.url,
      prefix: app.redisPrefix,
      publisher: app.redis,
    });
    second = await buildServer({ ...app, liveEvents: secondEvents });
    secondBase = await second.listen({ port: 0, host: '127.0.0.1' });
  });

  afterAll(async () => {
    await second?.close();
    await secondEvents?.close();
  });

  test('a post on server A reaches a subscriber on server B', async () => {
    const stream = await subscribe(secondBase, bob, POST_CREATED);
    try {
      const id = await restPost(alice, { type: 'post', content: 'from the other process' });
      const event = await within(stream.next());
      expect(event.data.postCreated).toMatchObject({ id, content: 'from the other process' });
    } finally {
      stream.close();
    }
  });

  test('closing a server cuts its open subscriptions instead of waiting for them', async () => {
    const stream = await subscribe(secondBase, bob, POST_CREATED);
    const ended = stream.next().then(
      () => 'an event',
      () => 'ended',
    );
    await within(second.close(), 5_000);
    expect(await within(ended, 5_000)).toBe('ended');
    await expect.poll(() => redisSubscribers('post-created')).toBe(0);
  });
});
