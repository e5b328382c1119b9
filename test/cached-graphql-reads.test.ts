import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRateLimiter } from '../src/adapters/redis/rate-limiter.js';
import { createCachedGraphqlReads, type HandOver } from '../src/api/cached-reads/cached-graphql-reads.js';
import { answerKey, type GraphqlResponseCache, type KeptAnswer } from '../src/api/graphql/response-cache.js';
import type { ApiDeps } from '../src/app/api-deps.js';
import { openServiceHarness, type Member, type ServiceHarness } from './support/service-harness.js';

/**
 * The cached reads that give kept GraphQL answers before Fastify
 * (src/api/cached-reads/cached-graphql-reads.ts), on a node:http server of their own whose hand-over answers 599 with the body it was handed: every
 * answer says who gave it, and a handed-over body can be compared with the one sent. The kept
 * answers come from a table of our own behind the response cache's interface; the real cache and
 * the route around it are tested in graphql-read, read-cache and graphql-limits.
 */
let h: ServiceHarness;
let reader: Member;

const HOST = 'api.example';
const QUERY = '{ feed(sort: LATEST, first: 2) { edges { node { id } } } }';
const KEPT_BODY = Buffer.from('{"data":{"feed":{"edges":[]}}}');

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function post(
  port: number,
  body: string,
  headers: Record<string, string>,
  path = '/graphql',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: {
          host: HOST,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Kept answers of our own, by key, behind the cache's interface; `fresh` false: a refresh is due. */
function keptAnswers(kept: Map<string, KeptAnswer>, state = { fresh: true }): GraphqlResponseCache {
  return {
    has: (key) => kept.has(key),
    answerNow: (key) => (state.fresh ? kept.get(key) : undefined),
    serve: () => Promise.reject(new Error('not used by the front')),
    plugin: {},
  };
}

async function frontServer(
  deps: ApiDeps,
  answers: GraphqlResponseCache,
): Promise<{ port: number; server: Server; close: () => void }> {
  const front = createCachedGraphqlReads(deps, answers);
  const handOver: HandOver = (_req, res, body) => {
    res.writeHead(599, { 'content-type': 'text/plain' });
    res.end(body ?? 'no body');
  };
  const server = createServer((req, res) => {
    if (!front.take(req, res, handOver)) {
      res.writeHead(598);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, server, close: () => front.close() };
}

const keyFor = (who: Member | undefined, body: object, accept?: string) =>
  answerKey({
    headers: { ...(who ? { authorization: `Bearer ${who.key}` } : {}), ...(accept ? { accept } : {}) },
    protocol: 'http',
    host: HOST,
    body,
  });

const kept = (spent: KeptAnswer['spent'] = [{ bucket: 'read', cost: 1 }]): KeptAnswer => ({
  headers: [['content-type', 'application/graphql-response+json; charset=utf-8']],
  body: KEPT_BODY,
  spent,
});

beforeAll(async () => {
  h = await openServiceHarness({ READ_CACHE_TTL_MS: '3600000', RATE_LIMIT_MULTIPLIER: '0' });
  reader = await h.member('gqlfront_reader', 0n, ['read']);
});
afterAll(() => h?.close());

describe('the GraphQL front', () => {
  test('gives a kept answer with its headers and exact bytes; anything not kept is handed over with its body', async () => {
    const body = { query: QUERY };
    const table = new Map([[keyFor(reader, body), kept()]]);
    const { port, server } = await frontServer(h.env.app, keptAnswers(table));
    try {
      const auth = { authorization: `Bearer ${reader.key}` };
      const answer = await post(port, JSON.stringify(body), auth);
      expect(answer.status).toBe(200);
      expect(answer.body).toBe(KEPT_BODY.toString());
      expect(answer.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
      expect(answer.headers['content-length']).toBe(String(KEPT_BODY.length));

      // Handed over, each with the very body sent.
      const handed = [
        JSON.stringify({ query: `${QUERY} ` }), // another document
        JSON.stringify({ query: QUERY, variables: { a: 1 } }),
        '{"query": "{ feed', // not JSON
        JSON.stringify({ query: QUERY, __proto__x: 1 }).replace('__proto__x', '__proto__'), // Fastify refuses it
        JSON.stringify([{ query: QUERY }]), // a batch
      ];
      for (const text of handed) {
        const other = await post(port, text, auth);
        expect(other.status, text).toBe(599);
        expect(other.body).toBe(text);
      }
      // Another key, another Accept: not this answer.
      const otherAccept = await post(port, JSON.stringify(body), { ...auth, accept: 'application/json' });
      expect(otherAccept.status).toBe(599);
      // A key that does not authenticate is Yoga's to refuse.
      expect(
        (await post(port, JSON.stringify(body), { authorization: `Bearer ${reader.key}x` })).status,
      ).toBe(599);
    } finally {
      server.close();
    }
  });

  test('takes only what it can read as the route does', async () => {
    const body = JSON.stringify({ query: QUERY });
    const table = new Map([[keyFor(reader, { query: QUERY }), kept()]]);
    const { port, server, close } = await frontServer(h.env.app, keptAnswers(table));
    try {
      const auth = { authorization: `Bearer ${reader.key}` };
      expect((await post(port, body, auth)).status).toBe(200);
      expect((await post(port, body, { ...auth, origin: 'https://x.example' })).status).toBe(598);
      expect((await post(port, body, { ...auth, 'x-forwarded-proto': 'https' })).status).toBe(598);
      expect((await post(port, body, { ...auth, 'content-type': 'application/graphql' })).status).toBe(598);
      expect((await post(port, body, auth, '/graphql?x=1')).status).toBe(598);
      close();
      expect((await post(port, body, auth)).status).toBe(598);
    } finally {
      server.close();
    }
  });

  test('hands over an answer whose refresh is due: the route’s execution runs it', async () => {
    const body = { query: QUERY };
    const state = { fresh: false };
    const table = new Map([[keyFor(reader, body), kept()]]);
    const { port, server } = await frontServer(h.env.app, keptAnswers(table, state));
    try {
      expect((await post(port, JSON.stringify(body), { authorization: `Bearer ${reader.key}` })).status).toBe(
        599,
      );
      state.fresh = true;
      expect((await post(port, JSON.stringify(body), { authorization: `Bearer ${reader.key}` })).status).toBe(
        200,
      );
    } finally {
      server.close();
    }
  });

  test('spends what the execution spent, with RateLimit headers; a refused bucket is handed over to Yoga', async () => {
    const { app } = h.env;
    const limited: ApiDeps = {
      ...app,
      rateLimiter: createRateLimiter(app.redis, {
        prefix: `${app.config.REDIS_PREFIX}gqlfront`,
        multiplier: 1,
      }),
    };
    const body = { query: QUERY };
    const table = new Map([[keyFor(reader, body), kept([{ bucket: 'read', cost: 30 }])]]);
    const { port, server } = await frontServer(limited, keptAnswers(table));
    try {
      const intoMinute = Date.now() % 60_000;
      if (intoMinute > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 50));
      const auth = { authorization: `Bearer ${reader.key}` };
      const first = await post(port, JSON.stringify(body), auth);
      expect(first.status).toBe(200);
      expect(first.headers.ratelimit).toMatch(/^"read";r=30;t=\d+$/);
      expect((await post(port, JSON.stringify(body), auth)).status).toBe(200);
      const refused = await post(port, JSON.stringify(body), auth);
      expect(refused.status).toBe(599);
      expect(refused.body).toBe(JSON.stringify(body));
    } finally {
      server.close();
    }
  });

  test('in the real server a handed-over body is the route’s to parse, and a kept answer equals the executed one', async () => {
    const port = Number(new URL(h.base).port);
    const auth = { authorization: `Bearer ${reader.key}` };
    const body = JSON.stringify({
      query: '{ feed(sort: LATEST, first: 3) { edges { node { id content } } } }',
    });
    const executed = await post(port, body, auth); // first time: handed over, body replayed to Fastify
    expect(executed.status).toBe(200);
    expect(JSON.parse(executed.body)).toHaveProperty('data.feed.edges');
    const again = await post(port, body, auth); // kept: given by the front
    expect(again.status).toBe(200);
    expect(again.body).toBe(executed.body);
    expect(again.headers['content-type']).toBe(executed.headers['content-type']);
    const poisoned = JSON.stringify({ query: '{ __typename }', p: 1 }).replace('"p"', '"__proto__"');
    const refused = await post(port, poisoned, auth);
    expect(refused.status).toBe(400);
  });
});
