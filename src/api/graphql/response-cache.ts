import type { FastifyReply, FastifyRequest } from 'fastify';
import { getOperationAST, Kind, OperationTypeNode, type ExecutionArgs } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { createReadCache } from '../../app/read-cache.js';
import { clientSubject } from '../client-subject.js';
import { authenticate } from '../../domain/auth/api-keys.service.js';
import type { ApiDeps } from '../api-deps.js';
import { spend } from '../rest/auth.hook.js';
import type { GraphQLContext } from './context.js';

/**
 * Answers to repeated read queries (a client polling the feed), kept until the next change.
 *
 * Only a query whose root fields are all in CACHEABLE_ROOT_FIELDS is kept: those read posts,
 * engagement and profiles, exactly what the `content` change signal covers (REST writes, GraphQL
 * mutations, failed payments, trending rebuilds). An answer is keyed by everything that shapes it:
 * the document, variables and operation name, and the Authorization, Accept and Origin headers, so
 * it is only ever given to the same credentials that got it first (a field such as viewerHasLiked
 * is that viewer's).
 *
 * A cached answer still authenticates the key (a revoked key falls through to Yoga, which refuses
 * it) and spends the rate-limit buckets its first execution spent. Only answers without errors
 * are kept. Mutations run through Yoga and, once executed, signal the change themselves.
 */
const CACHEABLE_ROOT_FIELDS = new Set(['feed', 'post', 'user', 'trending', '__typename']);
const MAX_CACHED_ANSWERS = 1_000;

/** Only 200 answers are kept (see remember), so the status is not. */
interface CachedAnswer {
  headers: Array<[string, string]>;
  body: Buffer;
  spent: GraphQLContext['spent'];
}

export interface GraphqlResponseCache {
  /** The cache key of a request whose answer could be kept, or undefined. */
  keyOf(req: FastifyRequest): string | undefined;
  /** Answers from the cache; false when it holds nothing usable (the request goes to Yoga). */
  answer(key: string, req: FastifyRequest, reply: FastifyReply): Promise<boolean>;
  /** Marks the moment before execution, for remember(). */
  version(): number;
  /** Keeps Yoga's answer to `req` if the plugin found it cacheable; returns the body it read. */
  remember(
    key: string,
    version: number,
    req: FastifyRequest,
    response: Response,
  ): Promise<Buffer | undefined>;
  /** The Yoga plugin that marks cacheable executions and signals executed mutations. */
  plugin: Plugin;
}

export function createGraphqlResponseCache(deps: ApiDeps): GraphqlResponseCache {
  let answers: ReturnType<typeof createReadCache<CachedAnswer>> | undefined;
  // Created on first use: the schema printer builds the server with deps that refuse use.
  const cache = () =>
    (answers ??= createReadCache<CachedAnswer>(deps.changes, {
      topics: ['content', 'identity'],
      ttlMs: deps.readCacheTtlMs,
      maxEntries: MAX_CACHED_ANSWERS,
    }));
  const executions = new WeakMap<FastifyRequest, GraphQLContext>();

  return {
    keyOf: (req) => {
      if (req.method !== 'POST' || deps.readCacheTtlMs <= 0) return undefined;
      if (!req.headers['content-type']?.startsWith('application/json')) return undefined;
      const body = req.body as {
        query?: unknown;
        variables?: unknown;
        operationName?: unknown;
        extensions?: unknown;
      } | null;
      if (typeof body?.query !== 'string') return undefined;
      const { authorization, accept, origin } = req.headers;
      return JSON.stringify([
        authorization,
        accept,
        origin,
        body.query,
        body.variables,
        body.operationName,
        body.extensions,
      ]);
    },

    answer: async (key, req, reply) => {
      const cached = await cache().peek(key);
      if (!cached) return false;
      try {
        const header = req.headers.authorization;
        const subject = header ? (await authenticate(deps.apiKeys, header)).accountId : clientSubject(req.ip);
        for (const { bucket, cost } of cached.spent) await spend(deps, reply, bucket, subject, cost);
      } catch {
        return false; // refused: Yoga answers it with the proper error
      }
      for (const [name, value] of cached.headers) void reply.header(name, value);
      await reply.status(200).send(cached.body);
      return true;
    },

    version: () => cache().version(),

    remember: async (key, version, req, response) => {
      const ctx = executions.get(req);
      if (!ctx?.cacheable || response.status !== 200) return undefined;
      const body = Buffer.from(await response.arrayBuffer());
      const headers: Array<[string, string]> = [];
      response.headers.forEach((value, name) => {
        if (name !== 'content-length') headers.push([name, value]);
      });
      cache().remember(key, { headers, body, spent: [...ctx.spent] }, version);
      return body;
    },

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
            if (operation?.operation === OperationTypeNode.MUTATION) {
              // Committed by now, and the answer has not left: its client reads what it wrote.
              ctx.deps.changes.changed('content');
            }
            if (Symbol.asyncIterator in result || (result.errors?.length ?? 0) > 0) ctx.cacheable = false;
          },
        };
      },
    },
  };
}
