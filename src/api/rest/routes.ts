import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../api-deps.js';

/**
 * The /api/v1 compatibility layer. Each route parses input, calls one service function and maps
 * its result onto the spec's shapes; the resources arrive with their issues (accounts, posts,
 * feed). Until then every /api/v1 path answers the JSON 404 of the not-found handler.
 */
export function registerRestRoutes(_api: FastifyInstance, _deps: ApiDeps): void {}
