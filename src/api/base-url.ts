import type { FastifyRequest } from 'fastify';

/**
 * Absolute base URL as the client reached us: X-Forwarded-Proto and -Host count only when
 * TRUST_PROXY_HOPS says a proxy of ours stands in front (server.ts), like the client IP.
 */
export function baseUrlOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}
