import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { authenticate } from '../../domain/auth/api-keys.service.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { clientSubject } from '../client-subject.js';
import { BODY_LIMIT_BYTES } from '../error-response.js';
import {
  answerKey,
  spendAsExecuted,
  type GraphqlBody,
  type GraphqlResponseCache,
} from '../graphql/response-cache.js';
import { headersInto } from '../rate-limit-spend.js';
import { recordRequest } from '../request-record.js';
import { protocolOf, viaProxy } from './raw-request.js';

export const GRAPHQL_PATH = '/graphql';

/** Hands a request to Fastify, with its body when it was read here already. */
export type HandOver = (req: IncomingMessage, res: ServerResponse, body?: Buffer) => void;

export interface CachedGraphqlReads {
  /**
   * Takes a POST /graphql that may be a kept answer (returns true): answers it when it is one,
   * else hands it, with the body it read, to `handOver`. Returns false, having read nothing, for
   * anything else.
   */
  take(req: IncomingMessage, res: ServerResponse, handOver: HandOver): boolean;
  /** From now on nothing is taken (a closing server's answers are Fastify's). */
  close(): void;
}

/**
 * Kept GraphQL answers (graphql/response-cache.ts) given before Fastify and Yoga, as cached-feed-reads.ts
 * gives kept feed pages, and for the same reason: a client polling the feed is answered from the
 * cache almost always, and what the hit then costs is the framework around it.
 *
 * The request must be one whose answer the cache may hold, read exactly as the route reads it: a
 * POST of JSON (Content-Length within the body limit), no Origin, no X-Forwarded-* header. Its body
 * is read here; when it is not a kept answer's (first-time document, a body Fastify would refuse as
 * prototype poisoning or invalid JSON, a key that does not authenticate, an answer that must be
 * executed again, a refused rate limit) it goes to Fastify with that body, and the route handles
 * it as any other. A kept answer is given as the route gives it: after authenticating the key and
 * spending what its execution spent, with its headers and the RateLimit ones, to a viewer that did
 * not write since it was computed; it is counted and logged under the route's name.
 */
export function createCachedGraphqlReads(deps: ApiDeps, answers: GraphqlResponseCache): CachedGraphqlReads {
  let closed = false;

  const answerOrHandOver = async (
    req: IncomingMessage,
    res: ServerResponse,
    handOver: HandOver,
    started: number,
  ): Promise<void> => {
    const body = await readBody(req);
    if (!body) return; // the client went away, or sent another length than it announced
    const text = body.toString('utf8');
    const parsed = keptBody(text);
    const { headers } = req;
    const key =
      parsed && answerKey({ headers, protocol: protocolOf(req), host: headers.host!, body: parsed });
    if (!key || !answers.has(key)) return handOver(req, res, body);
    let viewer: string | undefined;
    if (headers.authorization) {
      try {
        viewer = (await authenticate(deps.apiKeys, headers.authorization)).accountId;
      } catch {
        return handOver(req, res, body); // Yoga answers the bad key
      }
    }
    const kept = answers.answerNow(key, viewer);
    if (!kept) return handOver(req, res, body);
    const sent: Record<string, string> = {};
    if (
      !(await spendAsExecuted(
        deps,
        kept,
        viewer ?? clientSubject(req.socket.remoteAddress ?? ''),
        headersInto(sent),
      ))
    ) {
      return handOver(req, res, body);
    }
    for (const [name, value] of kept.headers) sent[name.toLowerCase()] = value;
    sent['content-length'] = String(kept.body.length);
    res.writeHead(200, sent);
    res.end(kept.body);
    deps.metrics.cachedReads.hit(GRAPHQL_PATH);
    recordRequest(deps, deps.logger, {
      method: 'POST',
      url: GRAPHQL_PATH,
      route: GRAPHQL_PATH,
      status: 200,
      elapsedMs: performance.now() - started,
    });
  };

  return {
    take: (req, res, handOver) => {
      if (closed || req.method !== 'POST' || req.url !== GRAPHQL_PATH) return false;
      if (deps.readCacheTtlMs <= 0) return false;
      const { headers } = req;
      if (!headers['content-type']?.startsWith('application/json') || headers.origin !== undefined)
        return false;
      if (!headers.host || headers['transfer-encoding'] !== undefined) return false;
      if (viaProxy(headers)) return false;
      const length = Number(headers['content-length']);
      if (!Number.isInteger(length) || length <= 0 || length > BODY_LIMIT_BYTES) return false;
      const started = performance.now();
      answerOrHandOver(req, res, handOver, started).catch((error: unknown) => {
        deps.logger.error({ err: error }, 'kept GraphQL answer not sent');
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
          res.end(JSON.stringify({ errors: [{ message: 'Unexpected error.' }] }));
        }
      });
      return true;
    },
    close: () => {
      closed = true;
    },
  };
}

/** The whole body, or undefined when the request ends early or differs from its Content-Length. */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const expected = Number(req.headers['content-length']);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > expected) {
        req.destroy();
        resolve(undefined);
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(received === expected ? Buffer.concat(chunks, received) : undefined));
    req.on('error', () => resolve(undefined));
    req.on('close', () => resolve(undefined)); // settles nothing once 'end' resolved it
  });
}

/**
 * The body as the route would read it, if the cache may hold its answer: a JSON object with a
 * string query. Text Fastify refuses (its JSON parser rejects `__proto__` and `constructor` keys)
 * is not read here at all.
 */
function keptBody(text: string): GraphqlBody | undefined {
  if (text.includes('__proto__') || text.includes('constructor')) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  return typeof (body as GraphqlBody).query === 'string' ? body : undefined;
}
