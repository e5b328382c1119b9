import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRateLimiter } from '../src/adapters/redis/rate-limiter.js';
import { createCachedFeedReads, type CachedFeedReads } from '../src/api/cached-reads/cached-feed-reads.js';
import { createFeedPages, type FeedPages } from '../src/api/rest/feed-pages.js';
import { lookupIdOf } from '../src/domain/auth/api-key.js';
import type { ApiDeps } from '../src/app/api-deps.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * The cached reads that answer kept feed pages before Fastify
 * (src/api/cached-reads/cached-feed-reads.ts), on a node:http server of their own: whatever they do
 * not take is answered 599 here, so every answer below says who gave it. Its answers are compared with the route's (the harness's real server)
 * for the same request, Host header included (avatar URLs carry the base URL).
 */
let h: ServiceHarness;
let alice: Member;
let reader: Member;
let noRead: Member;
let postIds: string[];

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A server where only `front` answers (599: not taken). */
async function frontServer(front: CachedFeedReads): Promise<{ port: number; server: Server }> {
  const server = createServer((req, res) => {
    if (!front.take(req, res)) {
      res.writeHead(599);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, server };
}

const HOST = 'feed.example:8080';
const BASE = `http://${HOST}`;
const auth = (who: Member) => ({ authorization: `Bearer ${who.key}`, host: HOST });
const routePort = () => Number(new URL(h.base).port);

beforeAll(async () => {
  h = await openServiceHarness({ READ_CACHE_TTL_MS: '3600000', RATE_LIMIT_MULTIPLIER: '0' });
  alice = await h.member('front_alice', 5_000_000n);
  reader = await h.member('front_reader', 0n, ['read']);
  noRead = await h.member('front_noread', 0n, ['post']);
  postIds = [];
  for (const content of ['one', 'two', 'three']) {
    const created = await h.call(alice, 'POST', '/posts', { type: 'post', content });
    expect(created.status).toBe(201);
    postIds.push(((await created.json()) as { id: string }).id);
  }
});
afterAll(() => h?.close());

describe('a kept page', () => {
  let pages: FeedPages;
  let port: number;
  let server: Server;
  beforeAll(async () => {
    pages = createFeedPages(h.env.app);
    ({ port, server } = await frontServer(createCachedFeedReads(h.env.app, pages)));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('is answered by the front with the route’s bytes and headers; a page not kept is left to Fastify', async () => {
    const path = '/api/v1/feed?sort=latest&limit=2';
    expect((await get(port, path, auth(reader))).status).toBe(599);
    await pages.get(pages.page(BASE, { sort: 'latest', limit: '2' }), undefined);

    const front = await get(port, path, auth(reader));
    const route = await get(routePort(), path, auth(reader));
    expect(front.status).toBe(200);
    expect(front.body).toBe(route.body);
    expect(front.headers['content-type']).toBe(route.headers['content-type']);
    expect(front.headers['content-length']).toBe(route.headers['content-length']);
    const body = JSON.parse(front.body) as { posts: { id: string; author: { avatar_url: string } }[] };
    expect(body.posts.map((post) => post.id)).toEqual([postIds[2], postIds[1]]);
    expect(body.posts[0]!.author.avatar_url.startsWith(BASE)).toBe(true);

    // Fields in another order read the same page; a cursor page is kept under its own key.
    expect((await get(port, '/api/v1/feed?limit=2&sort=latest', auth(reader))).body).toBe(route.body);
    const cursor = (JSON.parse(route.body) as { next_cursor: string }).next_cursor;
    const next = `/api/v1/feed?sort=latest&limit=2&cursor=${cursor}`;
    expect((await get(port, next, auth(reader))).status).toBe(599);
    await pages.get(pages.page(BASE, { sort: 'latest', limit: '2', cursor }), undefined);
    const nextFront = await get(port, next, auth(reader));
    expect(nextFront.status).toBe(200);
    expect(nextFront.body).toBe((await get(routePort(), next, auth(reader))).body);
  });

  test('anything the front cannot read exactly as Fastify would is left to Fastify', async () => {
    await pages.get(pages.page(BASE, { sort: 'trending' }), undefined);
    expect((await get(port, '/api/v1/feed?sort=trending', auth(reader))).status).toBe(200);
    for (const path of [
      '/api/v1/feed?sort=trend%69ng', // encoded: Fastify decodes it
      '/api/v1/feed?sort=trending&sort=trending', // repeated: an array, which the route refuses
      '/api/v1/feed?sort=trending&x=1', // unknown field
      '/api/v1/feed?sort=trending&', // an empty pair
      '/api/v1/feed/?sort=trending', // another path (Fastify answers 404)
      '/api/v1/FEED?sort=trending',
    ]) {
      expect((await get(port, path, auth(reader))).status, path).toBe(599);
    }
    const path = '/api/v1/feed?sort=trending';
    expect((await get(port, path, { host: HOST })).status, 'no key: the route answers 401').toBe(599);
    expect((await get(port, path, { ...auth(reader), 'x-forwarded-host': 'other' })).status).toBe(599);
    expect((await get(port, path, { ...auth(reader), 'content-length': '0' })).status).toBe(599);
    expect((await get(port, path, auth(reader), 'HEAD')).status).toBe(599);
    expect((await get(port, path, auth(reader), 'POST')).status).toBe(599);
  });

  test('refuses a bad key (401) and a key without read (403) as the route does', async () => {
    await pages.get(pages.page(BASE, { sort: 'latest' }), undefined);
    const path = '/api/v1/feed?sort=latest';
    const invalid = { authorization: `Bearer ${reader.key.slice(0, -4)}AAAA`, host: HOST };
    for (const headers of [invalid, auth(noRead)]) {
      const front = await get(port, path, headers);
      const route = await get(routePort(), path, headers);
      expect(front.status).toBe(route.status);
      expect(front.body).toBe(route.body);
      expect(front.headers['content-type']).toBe(route.headers['content-type']);
    }
    expect((await get(port, path, invalid)).status).toBe(401);
    expect(JSON.parse((await get(port, path, auth(noRead))).body)).toMatchObject({ error: 'forbidden' });
  });

  test('a key revoked while its row is held in memory is refused at once (401)', async () => {
    await pages.get(pages.page(BASE, { sort: 'latest' }), undefined);
    const path = '/api/v1/feed?sort=latest';
    const leaving = await h.member('front_leaving', 0n, ['read']);
    expect((await get(port, path, auth(leaving))).status).toBe(200);
    // The row is held now (the first answer looked it up): this answer comes from memory.
    expect(h.env.app.apiKeys.findNow?.(lookupIdOf(leaving.key)!)).toBeDefined();
    expect((await get(port, path, auth(leaving))).status).toBe(200);
    expect(await h.env.app.apiKeys.revoke(lookupIdOf(leaving.key)!, null, new Date())).toBe(true);
    const refused = await get(port, path, auth(leaving));
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({ error: 'unauthorized' });
  });

  test('a viewer who wrote since the page was computed gets a page computed after the write', async () => {
    const path = '/api/v1/feed?sort=latest&limit=3';
    await pages.get(pages.page(BASE, { sort: 'latest', limit: '3' }), undefined);
    const [newest] = postIds.slice(-1);
    await sql`UPDATE posts SET content = 'edited beneath' WHERE id = ${newest}`.execute(h.env.app.db);
    const contentOf = (answer: Answer) =>
      (JSON.parse(answer.body) as { posts: { id: string; content: string }[] }).posts.find(
        (post) => post.id === newest,
      )?.content;
    // Nobody signalled the edit: the kept page is still answered to other readers.
    expect(contentOf(await get(port, path, auth(reader)))).toBe('three');
    h.env.app.changes.writes.record(alice.account.id);
    expect(contentOf(await get(port, path, auth(alice)))).toBe('edited beneath');
    await sql`UPDATE posts SET content = 'three' WHERE id = ${newest}`.execute(h.env.app.db);
  });

  test('counts each answer in the HTTP metrics under the route’s name', async () => {
    await pages.get(pages.page(BASE, { sort: 'latest', limit: '2' }), undefined);
    const count = async () => {
      const { values } = await h.env.app.metrics.httpRequests.get();
      return (
        values.find(
          (v) =>
            v.metricName === 'ledgerfeed_http_request_duration_seconds_count' &&
            v.labels.route === '/api/v1/feed' &&
            v.labels.status === '200',
        )?.value ?? 0
      );
    };
    const before = await count();
    expect((await get(port, '/api/v1/feed?sort=latest&limit=2', auth(reader))).status).toBe(200);
    expect(await count()).toBe(before + 1);
  });
});

test('spends the read bucket with its RateLimit headers and refuses past it (429, Retry-After)', async () => {
  const { app } = h.env;
  const limited: ApiDeps = {
    ...app,
    rateLimiter: createRateLimiter(app.redis, { prefix: `${app.config.REDIS_PREFIX}front`, multiplier: 1 }),
  };
  const pages = createFeedPages(limited);
  const { port, server } = await frontServer(createCachedFeedReads(limited, pages));
  try {
    await pages.get(pages.page(BASE, { sort: 'latest' }), undefined);
    // Windows are whole minutes: start the burst early in one so it cannot straddle two.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 50));
    const answers: Answer[] = [];
    for (let i = 0; i < 61; i++) answers.push(await get(port, '/api/v1/feed?sort=latest', auth(reader)));
    expect(answers.slice(0, 60).every((a) => a.status === 200)).toBe(true);
    expect(answers[0]!.headers['ratelimit-policy']).toMatch(/^"read";q=60;w=60$/);
    expect(answers[0]!.headers.ratelimit).toMatch(/^"read";r=59;t=\d+$/);
    const refused = answers[60]!;
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body)).toMatchObject({ error: 'rate_limited' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('takes nothing once closed', async () => {
  const pages = createFeedPages(h.env.app);
  const front = createCachedFeedReads(h.env.app, pages);
  const { port, server } = await frontServer(front);
  try {
    await pages.get(pages.page(BASE, { sort: 'latest' }), undefined);
    expect((await get(port, '/api/v1/feed?sort=latest', auth(reader))).status).toBe(200);
    front.close();
    expect((await get(port, '/api/v1/feed?sort=latest', auth(reader))).status).toBe(599);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
