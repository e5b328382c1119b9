import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  getOperationAST,
  OperationTypeNode,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLError,
  type GraphQLSchema,
} from 'graphql';
import { processRegularResult, type YogaServerInstance } from 'graphql-yoga';
import type { DependencyTracker } from '../../app/read-cache.js';
import type { GraphQLContext } from './context.js';

type ServerContext = { req: FastifyRequest; reply: FastifyReply; track?: DependencyTracker | undefined };

/** A GraphQL answer ready to send: status, headers and the whole body, or a stream. */
export interface GraphqlAnswer {
  status: number;
  headers: Array<[string, string]>;
  /** The JSON text, or Yoga's body stream (event streams, and anything the fast path leaves to Yoga). */
  body: string | ReadableStream<Uint8Array> | null;
}

/** A result as graphql-jit leaves it: with the serializer compiled for its query. */
type JitResult = ExecutionResult & { stringify?: (result: ExecutionResult) => string };

/** Yoga's envelop for one request, typed as this file uses it (envelop's own types are generic). */
interface Enveloped {
  schema: GraphQLSchema;
  parse(source: string): DocumentNode;
  validate(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[];
  contextFactory(): Promise<GraphQLContext>;
  execute(args: ExecutionArgs): Promise<JitResult>;
}

/** The only part of a Fetch Request that Yoga's envelop plugins read (see fastGraphqlAnswer). */
const POST_REQUEST = Object.freeze({ method: 'POST' });

const ACCEPTED: Record<string, 'application/json' | 'application/graphql-response+json'> = {
  '': 'application/json',
  '*/*': 'application/json',
  'application/json': 'application/json',
  'application/graphql-response+json': 'application/graphql-response+json',
};

/**
 * The common GraphQL request without Yoga's HTTP layer: a POST of a JSON body `{ query, variables?,
 * operationName? }` from no browser origin, asking for JSON, whose document parses, validates and is
 * a query. Yoga's own envelop (every plugin: query limits and rate-limit spending, the response
 * cache's, compiled execution, error masking) parses, validates and executes it, and the result is
 * answered as Yoga answers it: 200 with the JSON text when it has no errors, else Yoga's
 * processRegularResult decides the status and headers. Anything else (GET, other content types or
 * Accept values, CORS, batches, subscriptions, mutations, documents that do not parse or validate,
 * a key that does not authenticate) returns undefined before anything ran, and goes through Yoga
 * as a whole: its HTTP semantics stay the ones the graphql-http audits check.
 *
 * Why: Yoga's fetch-API layer (a Request and a Response object per request, header maps, body
 * streams) cost about as much as executing the feed query itself (see README, GraphQL miss).
 */
export async function fastGraphqlAnswer(
  yoga: YogaServerInstance<ServerContext, GraphQLContext>,
  serverContext: ServerContext,
): Promise<GraphqlAnswer | undefined> {
  const { req } = serverContext;
  if (req.method !== 'POST' || req.headers.origin !== undefined) return undefined;
  if (!req.headers['content-type']?.startsWith('application/json')) return undefined;
  const accepted = ACCEPTED[req.headers.accept ?? ''];
  if (!accepted) return undefined;
  const body = req.body as Record<string, unknown> | null;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { query, variables, operationName, extensions, ...rest } = body;
  if (typeof query !== 'string' || Object.keys(rest).length > 0 || extensions != null) return undefined;
  if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) return undefined;
  if (operationName != null && typeof operationName !== 'string') return undefined;

  // What Yoga puts beside the server context. Its envelop plugins read `request.method` (a parse
  // error is marked HTTP 400, and cached marked: the document cache is shared with Yoga's own
  // requests) and `params`; nothing in the envelop phase reads more of the request.
  const enveloped = yoga.getEnveloped({
    ...serverContext,
    request: POST_REQUEST,
    params: { query, variables, operationName },
  }) as unknown as Enveloped;
  let document: DocumentNode;
  try {
    document = enveloped.parse(query);
  } catch {
    return undefined; // Yoga answers the syntax error (or the token limit)
  }
  if (enveloped.validate(enveloped.schema, document).length > 0) return undefined;
  const operation = getOperationAST(document, operationName ?? undefined);
  if (operation?.operation !== OperationTypeNode.QUERY) return undefined;
  let contextValue: GraphQLContext;
  try {
    contextValue = await enveloped.contextFactory();
  } catch {
    return undefined; // a bad key: Yoga answers 401
  }
  let result: JitResult;
  try {
    result = await enveloped.execute({
      schema: enveloped.schema,
      document,
      contextValue,
      variableValues: (variables as Record<string, unknown> | null | undefined) ?? undefined,
      operationName: operationName ?? undefined,
    });
  } catch {
    // Thrown rather than answered (Redis down under the rate limiter...): Yoga runs the query again
    // and words the failure as it always does. A query changes nothing it could change twice.
    return undefined;
  }

  if (!result.errors?.length && !result.extensions) {
    const text = (result.stringify ?? JSON.stringify)(result);
    return { status: 200, headers: [['content-type', `${accepted}; charset=utf-8`]], body: text };
  }
  const response = processRegularResult(result, yoga.fetchAPI, accepted);
  const headers: Array<[string, string]> = [];
  response.headers.forEach((value, name) => headers.push([name, value]));
  return { status: response.status, headers, body: await response.text() };
}
