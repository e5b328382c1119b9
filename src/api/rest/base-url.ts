import type { FastifyRequest } from 'fastify';

/** Absolute base URL as the client reached us (trustProxy honours X-Forwarded-*). */
export function baseUrlOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}
