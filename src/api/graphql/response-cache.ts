import type { FastifyReply, FastifyRequest } from 'fastify';
import { getOperationAST, Kind, OperationTypeNode, type ExecutionArgs } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import {
  createReadCache,
  READ_REFRESH_EVERY_MS,
  READ_STALE_MS,
  type DependencyTracker,
} from '../../app/read-cache.js';
import { clientSubject } from '../client-subject.js';
import { authenticate } from '../../domain/auth/api-keys.service.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { spend, type HeaderSink } from '../rate-limit-spend.js';
import type { GraphQLContext } from './context.js';
import type { GraphqlAnswer } from './fast-path.js';

/**
 * Answers to repeated read queries (a client polling the feed), kept until what they show changes.
 *
 * Only a query whose root fields are all in CACHEABLE_ROOT_FIELDS is kept: those read posts,
 * engagement and profiles, and their resolvers record what they read in the context's tracker
 * (`post:<id>` of each post shown, `account:<id>` of each author, `latest`, `trending`, ...; see
 * app/change-signals.ts), so a like on one post makes stale only the answers that show it. An
 * answer is keyed by everything that shapes it: the document, variables and operation name, the
 * Authorization, Accept and Origin headers and the base URL (avatar URLs are absolute), so it is
 * only ever given to the same credentials that got it first (a field such as viewerHasLiked is
 * that viewer's).
 *
 * Concurrent requests for one key share one execution. A stale answer is given to other requests
 * for at most READ_STALE_MS while one request, the first to find it stale, executes the query
 * again (an execution belongs to a request: it spends that request's rate limit). An answer is
 * never given to a viewer that wrote after its execution began (read-your-writes): mutations note
 * their writer here, REST writes in server.ts.
 *
 * A cached or shared answer still authenticates the key (a revoked key falls through to Yoga,
 * which refuses it) and spends the rate-limit buckets its execution spent. Only answers without
 * errors are kept.
 */
const CACHEABLE_ROOT_FIELDS = new Set(['feed', 'post', 'user', 'trending', '__typename']);
const MAX_CACHED_ANSWERS = 1_000;

/** Only 200 answers are kept, so the status is not. */
interface CachedAnswer {
  headers: Array<[string, string]>;
  body: Buffer;
  spent: GraphQLContext['spent'];
}

/** What the request must do after `serve`. */
export type Served =
  /** Answered from the cache or from another request's execution: nothing left to do. */
  | { kind: 'answered' }
  /** This request executed the query: send `answer`. */
  | { kind: 'executed'; answer: GraphqlAnswer }
  /** Nothing to share (not cacheable, a shared execution failed or cannot be shared): execute. */
  | { kind: 'execute' };

export interface GraphqlResponseCache {
  /**
   * Answers `req` from the cache, from an execution in flight, or by running `execute` (Yoga) for
   * it and keeping its answer when the plugin found it cacheable.
   */
  serve(
    req: FastifyRequest,
    reply: FastifyReply,
    execute: (track: DependencyTracker) => Promise<GraphqlAnswer>,
  ): Promise<Served>;
  /** The Yoga plugin that marks cacheable executions and notes the writers of mutations. */
  plugin: Plugin;
  /**
   * The answer kept under `key` if it may be given to `viewer` now without executing anything
   * (ReadCache.answerNow; a due refresh is left to a request through Yoga, whose execution it is).
   */
  answerNow(key: string, viewer: string | undefined): KeptAnswer | undefined;
  /** An answer is kept under `key`. */
  has(key: string): boolean;
}

/** A kept answer: sent as it is after spending what its execution spent (spendAsExecuted). */
export type KeptAnswer = CachedAnswer;

/** A whole answer's body as bytes (a kept answer is sent again as it is). */
async function bodyBytes(body: GraphqlAnswer['body']): Promise<Buffer> {
  if (body === null) return Buffer.alloc(0);
  if (typeof body === 'string') return Buffer.from(body);
  const chunks: Uint8Array[] = [];
  const reader = body.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) chunks.push(read.value);
  return Buffer.concat(chunks);
}

/** A GraphQL POST body as sent (any field may be missing or of any type). */
export interface GraphqlBody {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
  extensions?: unknown;
}

/** What an answer is kept under: everything that shapes it (see above). */
export function answerKey(request: {
  headers: { authorization?: string; accept?: string; origin?: string };
  protocol: string;
  host: string;
  body: GraphqlBody;
}): string {
  const { headers, body } = request;
  return JSON.stringify([
    headers.authorization,
    headers.accept,
    headers.origin,
    request.protocol,
    request.host,
    body.query,
    body.variables,
    body.operationName,
    body.extensions,
  ]);
}

/**
 * Spends, for a kept answer given again, what its execution spent (the same buckets and costs);
 * false when a bucket refused: the request then goes through Yoga, which answers the refusal as
 * the GraphQL error it is.
 */
export async function spendAsExecuted(
  deps: ApiDeps,
  answer: CachedAnswer,
  subject: string,
  sink: HeaderSink,
): Promise<boolean> {
  try {
    for (const { bucket, cost } of answer.spent) await spend(deps, sink, bucket, subject, cost);
    return true;
  } catch {
    return false;
  }
}

export function createGraphqlResponseCache(deps: ApiDeps): GraphqlResponseCache {
  let answers: ReturnType<typeof createReadCache<CachedAnswer | null>> | undefined;
  // Created on first use: the schema printer builds the server with deps that refuse use.
  const cache = () =>
    (answers ??= createReadCache<CachedAnswer | null>(deps.changes, {
      ttlMs: deps.readCacheTtlMs,
      maxEntries: MAX_CACHED_ANSWERS,
      staleMs: READ_STALE_MS,
      expiredMs: READ_STALE_MS,
      refresh: 'caller',
      refreshEveryMs: READ_REFRESH_EVERY_MS,
    }));
  const executions = new WeakMap<FastifyRequest, GraphQLContext>();

  const keyOf = (req: FastifyRequest): string | undefined => {
    if (req.method !== 'POST' || deps.readCacheTtlMs <= 0) return undefined;
    if (!req.headers['content-type']?.startsWith('application/json')) return undefined;
    const body = req.body as GraphqlBody | null;
    if (typeof body?.query !== 'string') return undefined;
    return answerKey({ headers: req.headers, protocol: req.protocol, host: req.host, body });
  };

  /** Sends a kept answer, after authenticating and spending what its execution spent. */
  const answerWith = async (answer: CachedAnswer, subject: string, reply: FastifyReply): Promise<boolean> => {
    if (!(await spendAsExecuted(deps, answer, subject, reply))) return false;
    for (const [name, value] of answer.headers) void reply.header(name, value);
    await reply.status(200).send(answer.body);
    return true;
  };

  return {
    serve: async (req, reply, execute) => {
      const key = keyOf(req);
      if (key === undefined) return { kind: 'execute' };
      const header = req.headers.authorization;
      let viewer: string | undefined;
      if (header) {
        try {
          viewer = (await authenticate(deps.apiKeys, header)).accountId;
        } catch {
          return { kind: 'execute' }; // Yoga answers the bad key (401)
        }
      }

      let ran = false;
      let executed: GraphqlAnswer | undefined;
      let answer: CachedAnswer | null;
      try {
        answer = await cache().get(
          key,
          async (track) => {
            ran = true;
            executed = await execute(track);
            const ctx = executions.get(req);
            if (!ctx?.cacheable || executed.status !== 200) {
              track.keepNot();
              return null; // requests that joined this execution run their own
            }
            const body = await bodyBytes(executed.body);
            executed = { ...executed, body: body.toString() };
            const headers = executed.headers.filter(([name]) => name.toLowerCase() !== 'content-length');
            return { headers, body, spent: [...ctx.spent] };
          },
          viewer,
        );
      } catch (error) {
        if (ran) throw error; // our own execution failed: as without the cache
        return { kind: 'execute' }; // one we joined failed: ours may not
      }
      if (executed) return { kind: 'executed', answer: executed };
      if (answer && (await answerWith(answer, viewer ?? clientSubject(req.ip), reply))) {
        return { kind: 'answered' };
      }
      return { kind: 'execute' };
    },

    answerNow: (key, viewer) => cache().answerNow(key, viewer) ?? undefined,
    has: (key) => cache().has(key),

    plugin: {
      onExecute: ({ args }: { args: ExecutionArgs }) => {
        const ctx = args.contextValue as GraphQLContext;
        const operation = getOperationAST(args.document, args.operationName);
        executions.set(ctx.req, ctx);
        ctx.cacheable =
          operation?.operation === OperationTypeNode.QUERY &&
          operation.selectionSet.selections.every(
            (selection) => selection.kind === Kind.FIELD && CACHEABLE_ROOT_FIELDS.has(selection.name.value),
          );
        return {
          onExecuteDone: ({ result }) => {
            if (operation?.operation === OperationTypeNode.MUTATION && ctx.viewer) {
              // Committed by now, and the answer has not left: its client reads past every cached
              // answer computed before it. What it changed was told by the write itself.
              ctx.deps.changes.writes.record(ctx.viewer.accountId);
            }
            if (Symbol.asyncIterator in result || (result.errors?.length ?? 0) > 0) ctx.cacheable = false;
          },
        };
      },
    },
  };
}
