import type { FastifyInstance } from 'fastify';
import { typedRoutes } from './typed-routes.js';
import { sendUsdc } from '../../app/write-path/send-usdc.js';
import { usdNumber } from '../http-views.js';
import type { ApiDeps } from '../../app/api-deps.js';
import { parseSendAmount } from '../../domain/sends/send-rules.js';
import {
  authErrors,
  errorBody,
  idempotencyKeyHeaders,
  insufficientBalanceBody,
  ONE_LINE,
  pendingStatus,
} from './schemas.js';

/** Types only: the rules (minimum, decimals, memo length) are the domain's, with messages naming them. */
const sendBody = {
  type: 'object',
  required: ['to_handle', 'amount_usd'],
  additionalProperties: false,
  properties: {
    to_handle: { type: 'string', description: 'Recipient handle, without the @ (a leading @ is tolerated)' },
    amount_usd: {
      anyOf: [{ type: 'number' }, { type: 'string' }],
      description:
        'Dollars: at least 0.01, at most 6 decimals; a JSON number (no exponent notation) or a string of digits',
    },
    memo: {
      type: 'string',
      description: `At most 200 characters, ${ONE_LINE}; on chain in the Memo and in both histories`,
    },
  },
  examples: [{ to_handle: 'bob', amount_usd: 2.5, memo: 'For the thread on fees' }],
} as const;

/** The spec's send answer; `status` only on 202. */
const createdSend = {
  type: 'object',
  required: ['id', 'from', 'to', 'amount_usd', 'swap_tx', 'created_at'],
  properties: {
    id: { type: 'string', description: 'ID of the send' },
    from: { type: 'string', description: 'Sender handle' },
    to: { type: 'string', description: 'Recipient handle' },
    amount_usd: { type: 'number' },
    swap_tx: { type: 'string', description: 'Signature of the USDC transfer' },
    created_at: { type: 'string', format: 'date-time' },
    status: pendingStatus,
  },
} as const;

/**
 * POST /send: USDC from the caller's balance to another account (scope `send`, bucket `send`,
 * 5/min). Committed with its signed transfer (outbox) before anything is sent, then awaited like
 * a paid post: 201 once the cluster executed it, 202 `pending` past WRITE_TIMEOUT_MS.
 */
export function registerSendRoutes(api: FastifyInstance, deps: ApiDeps): void {
  // The body's type is derived from sendBody (json-schema-to-ts): no hand-written twin to drift.
  typedRoutes(api).post(
    '/send',
    {
      config: { scope: 'send', bucket: 'send', idempotent: true },
      schema: {
        operationId: 'send',
        summary: 'Send USDC to another account',
        tags: ['money'],
        headers: idempotencyKeyHeaders,
        body: sendBody,
        response: {
          201: createdSend,
          202: createdSend,
          400: errorBody,
          402: insufficientBalanceBody,
          404: errorBody,
          422: errorBody,
          503: errorBody,
          ...authErrors,
        },
      },
    },
    async (request, reply) => {
      const { body } = request;
      const sent = await sendUsdc(
        deps,
        request.viewer!.accountId,
        { toHandle: body.to_handle, amountMicro: parseSendAmount(body.amount_usd), memo: body.memo },
        request.idempotency,
      );
      return reply.status(sent.settled === 'pending' ? 202 : 201).send({
        id: sent.id,
        from: sent.fromHandle,
        to: sent.toHandle,
        amount_usd: usdNumber(sent.amountMicro),
        swap_tx: sent.landedSwapTx,
        created_at: sent.createdAt.toISOString(),
        ...(sent.settled === 'pending' ? { status: 'pending' } : {}),
      });
    },
  );
}
