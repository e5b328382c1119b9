import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiDeps } from '../api-deps.js';

/** The caller behind a request's API key; null until the accounts issue adds keys. */
export interface Viewer {
  accountId: string;
  role: 'user' | 'finance' | 'admin';
  scopes: ReadonlySet<'read' | 'post' | 'engage' | 'send'>;
}

/** Built once per request: per-request DataLoaders will hang off it so batching stays per request. */
export interface GraphQLContext {
  deps: ApiDeps;
  viewer: Viewer | null;
  req: FastifyRequest;
  reply: FastifyReply;
}
