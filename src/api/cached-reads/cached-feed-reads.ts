import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { ApiDeps } from '../../app/api-deps.js';
import { admit, admitNow } from '../admission.js';
import { errorAnswer } from '../error-response.js';
import { headersInto } from '../rate-limit-spend.js';
import { recordRequest } from '../request-record.js';
import { FEED_ADMISSION, type FeedPage, type FeedPages, type FeedQuery } from '../rest/feed-pages.js';
import { protocolOf, viaProxy } from './raw-request.js';

/** The route as Fastify names it in metrics. */
const FEED_ROUTE = '/api/v1/feed';

/**
 * The query characters read here: no percent-encoding and no `+`, so it reads a query
 * exactly as Fastify's parser does (cursors are base64url; sort and limit are words and digits).
 */
const PLAIN_QUERY = /^[A-Za-z0-9_.~=&-]*$/;
const QUERY_FIELDS = new Set<string>(['sort', 'cursor', 'limit']);
const JSON_TYPE = 'application/json; charset=utf-8';

export interface CachedFeedReads {
  /**
   * Takes the request when it is a GET of a feed page that is kept (answering it, or its error,
   * itself) and returns true; returns false, having done nothing, for anything else, which
   * Fastify then serves.
   */
  take(req: IncomingMessage, res: ServerResponse): boolean;
  /** From now on nothing is taken: a closing server's answers are Fastify's (503, connection close). */
  close(): void;
}

/**
 * GET /api/v1/feed answered before Fastify when its page is kept (rest/feed-pages.ts).
 *
 * Why: the feed's first pages are what every client polls, and they are answered from the cache
 * almost always, even while posts and likes are paid (a page stale for under READ_STALE_MS is
 * answered while one refresh runs). What such a hit costs is then the framework around it: routing,
 * six hooks, a reply object and a child logger per request cost about as much as node:http's own
 * parsing and writing (bench/read-under-writes.ts measures it against a plain node:http server).
 *
 * The answer is the route's, byte for byte, and so is everything around it: the key is
 * authenticated and must carry `read` (401/403 as the route answers them), the `read` bucket is
 * spent with its RateLimit headers (429), a viewer who wrote since the page was computed gets a
 * page computed after the write, errors are the route's JSON with the route's status, and the
 * request is counted in the HTTP metrics and logged under the route's name; admission, error
 * answers, metrics and the log line are the very functions Fastify's path calls (admission.ts,
 * error-response.ts, request-record.ts). Only requests read here exactly as Fastify would are taken: a first-time query (not yet validated by the
 * route), a query with encoded characters, repeated or unknown fields, a body, or X-Forwarded-*
 * headers go to Fastify, as does everything once the server closes.
 */
export function createCachedFeedReads(deps: ApiDeps, pages: FeedPages): CachedFeedReads {
  let closed = false;

  const send = (
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    headers: Record<string, string>,
    body: Buffer,
    started: number,
  ): void => {
    headers['content-type'] = JSON_TYPE;
    headers['content-length'] = String(body.length);
    res.writeHead(status, headers);
    res.end(body);
    deps.metrics.cachedReads.hit(FEED_ROUTE);
    recordRequest(deps, deps.logger, {
      method: 'GET',
      url: req.url ?? FEED_ROUTE,
      route: FEED_ROUTE,
      status,
      elapsedMs: performance.now() - started,
    });
  };

  /**
   * The answer when everything it needs is in memory: the key's row (authenticateNow), a page this
   * viewer may be given now, and no rate limit to count (counting is a Redis round trip). Nothing
   * is awaited, so a hit costs no promise and no turn of the microtask queue: with nothing written,
   * the main thread's CPU per kept-page request fell from 34-43 to 26-31 µs (docs/read-path.md).
   * Anything else, errors included, is answer()'s.
   */
  const answerFromMemory = (
    req: IncomingMessage,
    res: ServerResponse,
    page: FeedPage,
    authorization: string,
    started: number,
  ): boolean => {
    const viewer = admitNow(deps, authorization, FEED_ADMISSION);
    if (!viewer) return false;
    const body = pages.answerNow(page, viewer.accountId);
    if (!body) return false;
    send(req, res, 200, {}, body, started);
    return true;
  };

  const answer = async (
    req: IncomingMessage,
    res: ServerResponse,
    page: FeedPage,
    authorization: string,
    started: number,
  ): Promise<void> => {
    const headers: Record<string, string> = {};
    let status = 200;
    let body: Buffer;
    try {
      const presented = { authorization, clientIp: req.socket.remoteAddress ?? '' };
      const viewer = (await admit(deps, presented, FEED_ADMISSION, headersInto(headers)))!;
      body = pages.answerNow(page, viewer.accountId) ?? (await pages.get(page, viewer.accountId));
    } catch (error) {
      const refused = errorAnswer(error);
      status = refused.status;
      body = Buffer.from(JSON.stringify(refused.body));
      Object.assign(headers, refused.headers);
      if (status >= 500) deps.logger.error({ err: error }, 'request failed');
    }
    send(req, res, status, headers, body, started);
  };

  return {
    take: (req, res) => {
      if (closed || req.method !== 'GET') return false;
      const url = req.url ?? '';
      const mark = url.indexOf('?');
      if ((mark < 0 ? url : url.slice(0, mark)) !== FEED_ROUTE) return false;
      const { headers } = req;
      const authorization = headers.authorization;
      const host = headers.host;
      if (!authorization || !host) return false;
      if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) return false;
      if (viaProxy(headers)) return false;
      const query = mark < 0 ? {} : plainQuery(url.slice(mark + 1));
      if (!query) return false;
      const page = pages.page(`${protocolOf(req)}://${host}`, query);
      if (!pages.has(page)) return false;
      const started = performance.now();
      try {
        if (answerFromMemory(req, res, page, authorization, started)) return true;
      } catch (error) {
        // Not expected (nothing on that path does I/O); the awaited path answers, or the error shows.
        deps.logger.error({ err: error }, 'feed answer from memory failed');
        if (res.headersSent) return true;
      }
      answer(req, res, page, authorization, started).catch((error: unknown) => {
        // Only writing the answer can fail here (the connection went away).
        deps.logger.warn({ err: error }, 'feed answer not sent');
      });
      return true;
    },
    close: () => {
      closed = true;
    },
  };
}

/** `sort`, `cursor` and `limit`, each at most once, in plain characters; undefined otherwise. */
function plainQuery(text: string): FeedQuery | undefined {
  if (!PLAIN_QUERY.test(text)) return undefined;
  const query: Record<string, string> = {};
  if (text === '') return query;
  for (const pair of text.split('&')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) return undefined;
    const name = pair.slice(0, eq);
    if (!QUERY_FIELDS.has(name) || name in query) return undefined;
    query[name] = pair.slice(eq + 1);
  }
  return query;
}
