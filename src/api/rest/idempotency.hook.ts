import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { sql } from 'kysely';
import { IDEMPOTENCY_KEY_TTL_HOURS } from '../../app/write-path/idempotency-keys.js';
import { AppError } from '../../domain/errors.js';
import type { ApiDeps } from '../api-deps.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route moves money: an `Idempotency-Key` header makes it safe to retry. */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    /** The key this request owns (first of its kind): its answer is stored on send. */
    idempotencyKey?: string;
  }
}

const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;
const POLL_MS = 50;

/**
 * Stripe's semantics for `Idempotency-Key` on money-moving POSTs, per account: the first request
 * with a key is recorded as in flight before any work; a repeat with the same method, path and
 * body gets the first answer (waiting while the first is still in flight), marked
 * `Idempotent-Replayed: true`; a repeat with another body is 422. A 5xx answer is not kept, so
 * the client may retry the same key. Without the header nothing changes.
 *
 * That last rule is safe only because a 5xx always means nothing was charged: once a paid write's
 * money move has committed, the route answers 201 or 202 `pending` whatever fails after it
 * (awaitPayment), and that answer is kept like any other. Keys older than the TTL are reused here
 * and purged by the worker role (workers/idempotency-purge.loop.ts).
 */
export function registerIdempotency(api: FastifyInstance, deps: ApiDeps): void {
  api.addHook('preHandler', async (request, reply) => {
    if (!request.routeOptions.config.idempotent || !request.viewer) return;
    const header = request.headers['idempotency-key'];
    if (header === undefined) return;
    const key = Array.isArray(header) ? header[0] : header;
    if (!key || !KEY_FORMAT.test(key)) {
      throw new AppError('invalid_request', 'Idempotency-Key must be 1-255 visible ASCII characters');
    }
    const accountId = request.viewer.accountId;
    const requestHash = createHash('sha256')
      .update(
        `${request.method} ${request.routeOptions.url ?? ''} ${request.url} ${JSON.stringify(request.body ?? null)}`,
      )
      .digest('hex');

    // Expired keys make room for reuse; then the insert decides who owns the key.
    await deps.db
      .deleteFrom('idempotency_keys')
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .where('created_at', '<', sql<Date>`now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})`)
      .execute();
    const owned = await deps.db
      .insertInto('idempotency_keys')
      .values({ account_id: accountId, key, request_hash: requestHash })
      .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
      .returning('key')
      .executeTakeFirst();
    if (owned) {
      request.idempotencyKey = key;
      return;
    }
    return replay(deps, reply, accountId, key, requestHash);
  });

  api.addHook('onSend', async (request, reply, payload) => {
    const key = request.idempotencyKey;
    if (!key || !request.viewer) return payload;
    const accountId = request.viewer.accountId;
    if (reply.statusCode >= 500) {
      await deps.db
        .deleteFrom('idempotency_keys')
        .where('account_id', '=', accountId)
        .where('key', '=', key)
        .execute();
      return payload;
    }
    await deps.db
      .updateTable('idempotency_keys')
      .set({ response_status: reply.statusCode, response_body: typeof payload === 'string' ? payload : null })
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .execute();
    return payload;
  });
}

async function replay(
  deps: ApiDeps,
  reply: FastifyReply,
  accountId: string,
  key: string,
  requestHash: string,
) {
  const deadline = Date.now() + deps.writeTimeoutMs + 5_000;
  for (;;) {
    const row = await deps.db
      .selectFrom('idempotency_keys')
      .select(['request_hash', 'response_status', 'response_body'])
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!row) throw new AppError('conflict', 'The first request with this Idempotency-Key failed; retry it');
    if (row.request_hash !== requestHash) {
      throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request');
    }
    if (row.response_status !== null) {
      return reply
        .status(row.response_status)
        .header('content-type', 'application/json; charset=utf-8')
        .header('idempotent-replayed', 'true')
        .send(row.response_body);
    }
    if (Date.now() > deadline) {
      throw new AppError('conflict', 'A request with this Idempotency-Key is still in progress; retry later');
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
