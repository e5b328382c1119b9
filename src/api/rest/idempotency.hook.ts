import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  claimKey,
  readKey,
  releaseAfterFailure,
  renewLease,
  storeAnswer,
  takeOverKey,
  IDEMPOTENCY_KEY_TTL_HOURS,
  idempotencyLeaseMs,
  type IdempotencyClaim,
} from '../../app/write-path/idempotency-keys.js';
import { AppError } from '../../domain/errors.js';
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

const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;
const POLL_MS = 50;
/** Lease renewals of the requests this process owns keys for, by request. */
const renewals = new WeakMap<FastifyRequest, NodeJS.Timeout>();

/**
 * Stripe's semantics for `Idempotency-Key` on money-moving POSTs, per account: the first request
 * with a key is recorded as in flight before any work; a repeat with the same method, path and
 * body gets the first answer (waiting while the first is still in flight), marked
 * `Idempotent-Replayed: true`; a repeat with another body is 422. Without the header nothing
 * changes.
 *
 * A request owns its key's row by a random token and a lease (WRITE_TIMEOUT_MS + 5 s, renewed
 * every third of that while it works). A paid write's commit records the resource it created on
 * the row in the same statement, and only while its token still owns the row. A repeat that finds
 * the row unanswered with its lease run out (the owner's process died) takes it over in one
 * statement: if the dead owner's commit recorded a resource, the repeat answers with it, as the
 * route renders it (202 pending or 201), without charging again; if none was recorded, nothing was
 * charged and the repeat runs the request as the new owner. The dead owner's commit, should it
 * still arrive, fails (409) and commits nothing. A repeat waits for a live owner up to one lease
 * and then answers 409 `in progress`.
 *
 * A 5xx answer is not kept: the row is deleted when no resource was recorded (nothing was charged;
 * once a paid write's money move has committed, the route answers 201 or 202 `pending` whatever
 * fails after it, see awaitPayment), and otherwise its lease ends so the next repeat answers from
 * the resource. Keys older than the TTL are reused here and purged by the worker role
 * (workers/idempotency-purge.loop.ts).
 */
export function registerIdempotency(api: FastifyInstance, deps: ApiDeps): void {
  // Read at request time: the OpenAPI printer registers routes with deps that refuse use.
  const leaseMs = () => idempotencyLeaseMs(deps.writeTimeoutMs);

  api.addHook('preHandler', async (request, reply) => {
    if (!request.routeOptions.config.idempotent || !request.viewer) return;
    const header = request.headers['idempotency-key'];
    if (header === undefined) return;
    const key = Array.isArray(header) ? header[0] : header;
    if (!key || !KEY_FORMAT.test(key)) {
      throw new AppError('invalid_request', 'Idempotency-Key must be 1-255 visible ASCII characters');
    }
    const accountId = request.viewer.accountId;
    const requestHash = idempotencyRequestHash(
      request.method,
      request.routeOptions.url ?? '',
      request.url,
      request.body,
    );
    const claim: IdempotencyClaim = { accountId, key, owner: randomUUID() };

    // Long enough to see a dead owner's lease, renewed just before it died, run out.
    const deadline = Date.now() + leaseMs() + 1_000;
    for (;;) {
      if (
        await claimKey(deps.db, claim, requestHash, {
          leaseMs: leaseMs(),
          ttlHours: IDEMPOTENCY_KEY_TTL_HOURS,
        })
      ) {
        return own(request, claim);
      }
      const row = await readKey(deps.db, accountId, key);
      if (!row) continue; // the first answered 5xx meanwhile: the key is free again
      if (row.requestHash !== requestHash) {
        throw new AppError(
          'idempotency_key_reused',
          'This Idempotency-Key was used with a different request',
        );
      }
      if (row.responseStatus !== null) {
        return reply
          .status(row.responseStatus)
          .header('content-type', 'application/json; charset=utf-8')
          .header('idempotent-replayed', 'true')
          .send(row.responseBody);
      }
      if (row.expired) {
        const taken = await takeOverKey(deps.db, claim, row.owner, leaseMs());
        if (taken) {
          request.log.warn(
            { idempotencyKey: key, resumed: taken.resource ?? null },
            'took over an Idempotency-Key whose owner stopped renewing its lease',
          );
          return own(request, { ...claim, resume: taken.resource });
        }
        continue; // renewed, answered or taken by another repeat meanwhile: look again
      }
      if (Date.now() > deadline) {
        throw new AppError(
          'conflict',
          'A request with this Idempotency-Key is still in progress; retry later',
        );
      }
      await sleep(POLL_MS);
    }
  });

  function own(request: FastifyRequest, claim: IdempotencyClaim): void {
    request.idempotency = claim;
    const timer = setInterval(() => {
      renewLease(deps.db, claim, leaseMs()).then(
        (owned) => {
          if (!owned) stopRenewing(request); // answered, or taken over: nothing left to hold
        },
        (error: unknown) => request.log.warn({ err: error }, 'Idempotency-Key lease not renewed'),
      );
    }, leaseMs() / 3);
    timer.unref();
    renewals.set(request, timer);
  }

  api.addHook('onSend', async (request, reply, payload) => {
    const claim = request.idempotency;
    if (!claim) return payload;
    stopRenewing(request);
    if (reply.statusCode >= 500) {
      await releaseAfterFailure(deps.db, claim);
      return payload;
    }
    // A resumed request answers what the dead one would have: the request did not run again.
    if (claim.resume) reply.header('idempotent-replayed', 'true');
    await storeAnswer(deps.db, claim, reply.statusCode, typeof payload === 'string' ? payload : null);
    return payload;
  });
  // A request that ends without an answer sent (connection closed) stops renewing too.
  api.addHook('onResponse', (request, _reply, done) => {
    stopRenewing(request);
    done();
  });
}

/** What a repeat must match to share a key: method, route, URL and parsed body. */
export function idempotencyRequestHash(method: string, route: string, url: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${route} ${url} ${JSON.stringify(body ?? null)}`)
    .digest('hex');
}

function stopRenewing(request: FastifyRequest): void {
  const timer = renewals.get(request);
  if (timer === undefined) return;
  clearInterval(timer);
  renewals.delete(request);
}
