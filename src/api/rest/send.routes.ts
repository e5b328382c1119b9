import type { FastifyInstance } from 'fastify';
import { sendUsdc } from '../../app/write-path/send-usdc.js';
import { formatMicroUsd } from '../../domain/money/usd.js';
import type { ApiDeps } from '../api-deps.js';
import { awaitPayment } from '../../app/write-path/await-payment.js';
import { authErrors, errorBody, insufficientBalanceBody, pendingStatus } from './schemas.js';

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
      description: 'At most 200 characters; on chain in the Memo and in both histories',
    },
  },
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
  api.post(
    '/send',
    {
      config: { scope: 'send', bucket: 'send', idempotent: true },
      schema: {
        summary: 'Send USDC to another account',
        tags: ['money'],
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
      const created = await sendUsdc(deps, request.viewer!.accountId, request.body, request.idempotency);
      const { settled, swapTx } = await awaitPayment(deps, created);
      return reply.status(settled === 'pending' ? 202 : 201).send({
        id: created.id,
        from: created.fromHandle,
        to: created.toHandle,
        // Exact: the decimal text of the micro amount (at most 6 decimals) read as a number.
        amount_usd: Number(formatMicroUsd(created.amountMicro)),
        swap_tx: swapTx,
        created_at: created.createdAt.toISOString(),
        ...(settled === 'pending' ? { status: 'pending' } : {}),
      });
    },
  );
}
