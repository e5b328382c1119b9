import { request, type IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRateLimiter } from '../src/adapters/redis/rate-limiter.js';
import type { ApiDeps } from '../src/app/api-deps.js';
import { buildServer } from '../src/api/server.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * The contract of the second way in (src/api/cached-reads/): every cached route answers the same
 * whether its kept answer is given before Fastify or by Fastify's route. Each case sends the same
 * requests, in the same order, to two servers over the same stack, one with the cached reads first
 * and one without (cachedReadsFirst: false), each with its own caches, rate-limit buckets and
 * request log, and compares what a client and an operator see: status, body, content type,
 * RateLimit and Retry-After headers, the request counted in the HTTP metrics under the route's
 * name, and the log line. The cached-reads counter says which way answered, so a case where the
 * cache was bypassed cannot pass by accident.
 */
const HOST = 'contract.example:8080';
const GRAPHQL_FEED = JSON.stringify({
  query: '{ feed(sort: LATEST, first: 2) { edges { node { id content likeCount author { handle } } } } }',
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One way in: a server over deps of its own (rate limiter, log lines). */
interface Way {
  server: FastifyInstance;
  port: number;
  deps: ApiDeps;
  lines: string[];
}

interface Req {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

let h: ServiceHarness;
let reader: Member;
let noRead: Member;
const ways: Way[] = [];

function send(port: number, req: Req): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: HOST, ...req.headers };
    if (req.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(req.body));
    }
    const sent = request({ host: '127.0.0.1', port, path: req.path, method: req.method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    sent.on('error', reject);
    sent.end(req.body);
  });
}

/** A server of one way over the harness's stack; `limits`: rate limits counted (multiplier 1). */
async function openWay(first: boolean, limits: boolean, label: string): Promise<Way> {
  const { app } = h.env;
  const lines: string[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => lines.push((JSON.parse(line) as { msg: string }).msg) },
  );
  const deps: ApiDeps = {
    ...app,
    logger,
    rateLimiter: createRateLimiter(app.redis, {
      prefix: `${app.config.REDIS_PREFIX}contract-${label}:`,
      multiplier: limits ? 1 : 0,
    }),
  };
  const server = await buildServer(deps, { queueBoard: false, cachedReadsFirst: first });
  const base = await server.listen({ port: 0, host: '127.0.0.1' });
  return { server, port: Number(new URL(base).port), deps, lines };
}

/** Requests of the route in the HTTP metrics, every status. */
async function counted(route: string): Promise<number> {
  const { values } = await h.env.app.metrics.httpRequests.get();
  return values
    .filter(
      (v) => v.metricName === 'ledgerfeed_http_request_duration_seconds_count' && v.labels.route === route,
    )
    .reduce((sum, v) => sum + v.value, 0);
}

async function cachedReads(route: string): Promise<number> {
  const { values } = await h.env.app.metrics.cachedReads.get();
  return values.find((v) => v.labels.route === route)?.value ?? 0;
}

/** What a client and an operator see of one answer, timings left out. */
function seen(answer: Answer, line: string | undefined) {
  const { headers } = answer;
  return {
    status: answer.status,
    body: answer.body,
    contentType: headers['content-type'],
    rateLimitPolicy: headers['ratelimit-policy'],
    rateLimit: String(headers.ratelimit ?? '').replace(/;t=\d+$/, ';t=_'),
    retryAfter: headers['retry-after'] === undefined ? undefined : 'set',
    log: line?.replace(/ [\d.]+ms$/, ' _ms'),
  };
}

/**
 * Sends `req` once to each way (cached first, then Fastify only) and returns what each showed, with
 * whether the cached way answered it before Fastify; each answer must be counted once in the HTTP
 * metrics under the route's name.
 */
async function bothWays(pair: [Way, Way], req: Req, route: string) {
  const shown = [];
  let answeredFirst = false;
  for (const way of pair) {
    const lines = way.lines.length;
    const cachedBefore = await cachedReads(route);
    const countedBefore = await counted(route);
    const answer = await send(way.port, req);
    expect(await counted(route), 'counted once in the HTTP metrics').toBe(countedBefore + 1);
    if (way === pair[0]) answeredFirst = (await cachedReads(route)) > cachedBefore;
    shown.push(
      seen(
        answer,
        way.lines.slice(lines).find((line) => line.startsWith(`${req.method} `)),
      ),
    );
  }
  return { cached: shown[0]!, fastify: shown[1]!, answeredFirst };
}

beforeAll(async () => {
  h = await openServiceHarness({ READ_CACHE_TTL_MS: '3600000', RATE_LIMIT_MULTIPLIER: '0' });
  const author = await h.member('contract_author', 3_000_000n);
  reader = await h.member('contract_reader', 0n, ['read']);
  noRead = await h.member('contract_noread', 0n, ['post']);
  for (const content of ['one', 'two']) {
    expect((await h.call(author, 'POST', '/posts', { type: 'post', content })).status).toBe(201);
  }
  ways.push(
    await openWay(true, false, 'cached'),
    await openWay(false, false, 'fastify'),
    await openWay(true, true, 'cached-limited'),
    await openWay(false, true, 'fastify-limited'),
  );
});
afterAll(async () => {
  for (const way of ways) await way.server.close();
  await h?.close();
});

const bearer = (who: Member | string) => ({
  authorization: `Bearer ${typeof who === 'string' ? who : who.key}`,
});

/** Every route the cached reads answer, as a kept answer is asked for. */
const CACHED_ROUTES: Array<{ name: string; route: string; req: () => Req }> = [
  {
    name: 'REST feed, latest',
    route: '/api/v1/feed',
    req: () => ({ method: 'GET', path: '/api/v1/feed?sort=latest&limit=2', headers: bearer(reader) }),
  },
  {
    name: 'REST feed, trending',
    route: '/api/v1/feed',
    req: () => ({ method: 'GET', path: '/api/v1/feed?sort=trending&limit=2', headers: bearer(reader) }),
  },
  {
    name: 'GraphQL feed',
    route: '/graphql',
    req: () => ({ method: 'POST', path: '/graphql', headers: bearer(reader), body: GRAPHQL_FEED }),
  },
];

describe.each([
  ['rate limits off', 0],
  ['rate limits counted', 2],
] as const)('with %s, every cached route answers the same both ways', (_label, at) => {
  const pair = (): [Way, Way] => [ways[at]!, ways[at + 1]!];

  test.each(CACHED_ROUTES)('$name: a kept answer', async ({ route, req }) => {
    // The first request is the route's (it validates the query and fills the cache); the second is
    // the kept answer.
    await bothWays(pair(), req(), route);
    const { cached, fastify, answeredFirst } = await bothWays(pair(), req(), route);
    expect(answeredFirst).toBe(true);
    expect(cached.status).toBe(200);
    expect(cached).toEqual(fastify);
    if (at > 0) expect(cached.rateLimitPolicy).toMatch(/^"read";q=60;w=60$/);
  });

  test.each(CACHED_ROUTES.filter((r) => r.route !== '/graphql'))(
    '$name: a key that does not authenticate (401), one without `read` (403)',
    async ({ route, req }) => {
      await bothWays(pair(), req(), route); // kept
      for (const [who, status] of [
        [`lf_live_${'x'.repeat(40)}`, 401],
        [noRead, 403],
      ] as const) {
        const asked = { ...req(), headers: bearer(who) };
        const { cached, fastify, answeredFirst } = await bothWays(pair(), asked, route);
        expect(answeredFirst).toBe(true);
        expect(cached.status).toBe(status);
        expect(cached).toEqual(fastify);
      }
    },
  );

  test('GraphQL feed: a key that does not authenticate is Yoga’s to answer, the same both ways', async () => {
    const asked = { ...CACHED_ROUTES[2]!.req(), headers: bearer(`lf_live_${'y'.repeat(40)}`) };
    const { cached, fastify, answeredFirst } = await bothWays(pair(), asked, '/graphql');
    expect(answeredFirst).toBe(false);
    expect(cached.status).toBe(401);
    expect(cached).toEqual(fastify);
  });
});

test.each(CACHED_ROUTES.filter((r) => r.name !== 'REST feed, trending'))(
  '$name: past the read bucket, the same refusal both ways',
  async ({ name, route, req }) => {
    const label = name.replace(/\W+/g, '-');
    const pair: [Way, Way] = [
      await openWay(true, true, `a${label}`),
      await openWay(false, true, `b${label}`),
    ];
    try {
      // Windows are whole minutes: start the burst early in one so it cannot straddle two.
      const intoMinute = Date.now() % 60_000;
      if (intoMinute > 45_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 50));
      for (let i = 0; i < 60; i++) {
        const within = await bothWays(pair, req(), route);
        expect(within.cached).toEqual(within.fastify);
      }
      const past = await bothWays(pair, req(), route);
      expect(past.cached).toEqual(past.fastify);
      // REST refuses with 429 and Retry-After; GraphQL's kept answer is handed to Yoga, which
      // answers the refusal as the GraphQL error it is.
      if (route === '/graphql') expect(past.cached.body).toContain('RATE_LIMITED');
      else expect(past.cached).toMatchObject({ status: 429, retryAfter: 'set' });
    } finally {
      for (const way of pair) await way.server.close();
    }
  },
);
