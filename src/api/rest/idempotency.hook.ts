import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IdempotencyClaim } from '../../app/write-path/idempotency-keys.js';
import {
  checkIdempotencyKey,
  keyedRequestHash,
  takeIdempotencyKey,
  type OwnedKey,
} from '../../app/write-path/with-idempotency-key.js';
import type { ApiDeps } from '../../app/api-deps.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route moves money: an `Idempotency-Key` header makes it safe to retry. */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    /**
     * The key this request owns (the first with it, or a repeat that took a dead request's key
     * over): routes pass it to their use case, whose commit records what it created on the key.
     */
    idempotency?: IdempotencyClaim;
  }
}

/** The keys the requests of this process own, until their answer is kept. */
const ownedKeys = new WeakMap<FastifyRequest, OwnedKey>();

/**
 * `Idempotency-Key` on REST's money-moving POSTs (routes with `config.idempotent`), the rules of
 * app/write-path/with-idempotency-key.ts: a repeat with the same method, path and body gets the
 * first answer's exact bytes, marked `Idempotent-Replayed: true`; another body is 422. The hook
 * takes the key before the route runs and keeps the answer as it is sent; without the header
 * nothing changes.
 */
export function registerIdempotency(api: FastifyInstance, deps: ApiDeps): void {
  api.addHook('preHandler', async (request, reply) => {
    if (!request.routeOptions.config.idempotent || !request.viewer) return;
    const header = request.headers['idempotency-key'];
    if (header === undefined) return;
    const turn = await takeIdempotencyKey(deps, {
      accountId: request.viewer.accountId,
      key: checkIdempotencyKey((Array.isArray(header) ? header[0] : header) ?? ''),
      requestHash: idempotencyRequestHash(
        request.method,
        request.routeOptions.url ?? '',
        request.url,
        request.body,
      ),
    });
    if ('answered' in turn) {
      return reply
        .status(turn.answered.status)
        .header('content-type', 'application/json; charset=utf-8')
        .header('idempotent-replayed', 'true')
        .send(turn.answered.body);
    }
    ownedKeys.set(request, turn.owned);
    request.idempotency = turn.owned.claim;
  });

  api.addHook('onSend', async (request, reply, payload) => {
    const owned = ownedKeys.get(request);
    if (!owned) return payload;
    ownedKeys.delete(request);
    // A resumed request answers what the dead one would have: the request did not run again.
    if (owned.claim.resume && reply.statusCode < 500) reply.header('idempotent-replayed', 'true');
    await owned.finish({ status: reply.statusCode, body: typeof payload === 'string' ? payload : null });
    return payload;
  });
  // A request that ends without an answer sent (connection closed) stops renewing too.
  api.addHook('onResponse', (request, _reply, done) => {
    ownedKeys.get(request)?.abandon();
    ownedKeys.delete(request);
    done();
  });
}

/** What a repeat must match to share a key: method, route, URL and parsed body. */
export function idempotencyRequestHash(method: string, route: string, url: string, body: unknown): string {
  return keyedRequestHash(method, route, url, JSON.stringify(body ?? null));
}
