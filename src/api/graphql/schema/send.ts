import type { Paid } from '../../../app/write-path/await-payment.js';
import { sendUsdc, type CreatedSend } from '../../../app/write-path/send-usdc.js';
import { parseSendAmount } from '../../../domain/sends/send-rules.js';
import { builder } from '../builder.js';
import { IDEMPOTENCY_KEY_ARG_DESCRIPTION, runPaidMutation } from '../paid-mutation-key.js';
import { PaymentStatus } from './payment-status.js';

/*
 * The send mutation beside its type: the same use case (sendUsdc) and payment wait as POST /send,
 * with the same scope and rate-limit bucket.
 */

const PaidSend = builder.objectRef<Paid<CreatedSend>>('PaidSend').implement({
  description: 'USDC just sent to another account.',
  fields: (t) => ({
    id: t.exposeID('id'),
    from: t.exposeString('fromHandle', { description: 'Handle of the sender.' }),
    to: t.exposeString('toHandle', { description: 'Handle of the recipient.' }),
    amountUsdMicro: t.field({ type: 'MicroUsd', resolve: (send) => send.amountMicro }),
    memo: t.exposeString('memo', { nullable: true }),
    swapTx: t.string({ resolve: (send) => send.landedSwapTx }),
    status: t.field({ type: PaymentStatus, resolve: (send) => send.settled }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const SendInput = builder.inputType('SendInput', {
  fields: (t) => ({
    toHandle: t.string({ required: true }),
    amountUsd: t.string({
      required: true,
      description:
        'Decimal dollars as a string, read exactly ("1.25"): at least 0.01, at most 6 decimals, at most the available balance.',
    }),
    memo: t.string({
      description:
        'At most 200 characters, one line: no control characters (U+0000-U+001F, U+007F-U+009F) and no bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069); goes on chain and into both histories.',
    }),
  }),
});

builder.mutationFields((t) => ({
  send: t.field({
    type: PaidSend,
    description: 'Send USDC to another account (the twin of POST /send). Needs `send`.',
    authScopes: { send: true },
    rateLimit: 'send',
    args: {
      input: t.arg({ type: SendInput, required: true }),
      idempotencyKey: t.arg.string({ description: IDEMPOTENCY_KEY_ARG_DESCRIPTION }),
    },
    resolve: async (_root, args, ctx, info) => {
      const { input } = args;
      return runPaidMutation(ctx, info, args, (claim) =>
        sendUsdc(
          ctx.deps,
          ctx.viewer!.accountId,
          {
            toHandle: input.toHandle,
            amountMicro: parseSendAmount(input.amountUsd, 'amountUsd'),
            memo: input.memo ?? null,
          },
          claim,
        ),
      );
    },
  }),
}));
