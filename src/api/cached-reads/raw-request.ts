import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';

/**
 * What the cached reads (cached-reads-server.ts) read of a raw request as Fastify would. They take no request that
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
