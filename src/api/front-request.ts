import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { HeaderSink } from './rate-limit-spend.js';

/**
 * What the fronts (fronts.ts) read of a raw request as Fastify would. They take no request that
 * came through a proxy (X-Forwarded-*): its client IP, protocol and host depend on TRUST_PROXY_HOPS,
 * which Fastify applies.
 */
export function viaProxy(headers: IncomingHttpHeaders): boolean {
  return (
    headers['x-forwarded-for'] !== undefined ||
    headers['x-forwarded-proto'] !== undefined ||
    headers['x-forwarded-host'] !== undefined
  );
}

/** Fastify's request.protocol without a trusted proxy. */
export function protocolOf(req: IncomingMessage): 'http' | 'https' {
  return (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
}

/** Collects the headers spend() sets (RateLimit) into the answer's header object. */
export function headersInto(headers: Record<string, string>): HeaderSink {
  return { header: (name, value) => (headers[name] = value) };
}
