import { builder } from '../builder.js';

/*
 * The `status` of every paid mutation's answer (createPost, repost, send, swap): how far its payment
 * had got within WRITE_TIMEOUT_MS. Its own file because four types in four files share it.
 */
export const PaymentStatus = builder.enumType('PaymentStatus', {
  description: 'How far the USDC payment had got when the mutation answered.',
  values: {
    SENT: {
      value: 'sent',
      description:
        'Executed by the cluster (commitment processed); the worker follows it to confirmed, and its credits become spendable then.',
    },
    CONFIRMED: { value: 'confirmed', description: 'Confirmed on chain.' },
    FINALIZED: { value: 'finalized', description: 'Finalized on chain.' },
    PENDING: {
      value: 'pending',
      description: 'Not executed within WRITE_TIMEOUT_MS; the worker goes on (the swapTx is already known).',
    },
  } as const,
});
