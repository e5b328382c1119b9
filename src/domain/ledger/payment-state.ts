/**
 * How far a movement's chain transaction has got, as the outbox (`chain_transactions.status`)
 * records it: signed → sent (executed, commitment processed) → confirmed → finalized, or failed
 * (landed with an error; the movement's legs reversed). A confirmed payment that the chain later
 * loses goes back to signed and is sent again.
 */
export type OutboxStatus = 'signed' | 'sent' | 'confirmed' | 'finalized' | 'failed';

/**
 * A money move's state as clients see it. `pending`: signed or sent, not confirmed yet (its
 * credits to others are held); `confirmed`; `finalized`; `failed`: failed on chain, its legs
 * reversed (the history holds the refund).
 */
export type PaymentStatus = 'pending' | 'confirmed' | 'finalized' | 'failed';

export const PAYMENT_STATUSES: readonly PaymentStatus[] = ['pending', 'confirmed', 'finalized', 'failed'];

/** The outbox row of a movement's chain transaction, as far as its state goes. */
export interface OutboxState {
  status: OutboxStatus;
  /** The slot the chain last reported it in (processed, confirmed or finalized); null before. */
  slot: bigint | null;
  /** When the outbox saw it confirmed; null while it is not (again, for one the chain lost). */
  confirmedAt: Date | null;
  finalizedAt: Date | null;
}

/** What every money move with a `swap_tx` shows of its chain transaction. */
export interface PaymentState {
  /** Null only for a movement without a chain transaction (then it has no swap_tx either). */
  status: PaymentStatus | null;
  slot: number | null;
  confirmedAt: Date | null;
  finalizedAt: Date | null;
}

const NO_STATE: PaymentState = { status: null, slot: null, confirmedAt: null, finalizedAt: null };

export function paymentStatusOf(status: OutboxStatus): PaymentStatus {
  switch (status) {
    case 'signed':
    case 'sent':
      return 'pending';
    case 'confirmed':
    case 'finalized':
    case 'failed':
      return status;
  }
}

/**
 * The state a movement shows. With an outbox row, that row's (a refund shows the failed payment's,
 * an earning the payment that paid it: the same row). A deposit has no outbox row: the platform
 * did not send it, it credited it once the transfer was seen confirmed (the indexer reads at
 * `confirmed`, the faucets wait for it), and the finality follower takes it on to `finalized`
 * through its deposit_transactions row, passed here as `outbox`. A deposit without one (none since
 * migration 2026_11_29_c) shows `confirmed` as of the credit, its slot unknown.
 */
export function paymentStateOf(movement: {
  outbox: OutboxState | null;
  swapTx: string | null;
  isDeposit: boolean;
  createdAt: Date;
}): PaymentState {
  const { outbox } = movement;
  if (outbox) {
    return {
      status: paymentStatusOf(outbox.status),
      // Far below 2^53 (a slot every 400 ms for millions of years): a plain number.
      slot: outbox.slot === null ? null : Number(outbox.slot),
      confirmedAt: outbox.confirmedAt,
      finalizedAt: outbox.finalizedAt,
    };
  }
  if (movement.isDeposit && movement.swapTx !== null) {
    return { status: 'confirmed', slot: null, confirmedAt: movement.createdAt, finalizedAt: null };
  }
  return NO_STATE;
}

/** A Solana transaction signature as shown in `swap_tx`: 64 bytes in base58 (64 to 88 characters). */
const SIGNATURE = /^[1-9A-HJ-NP-Za-km-z]{64,88}$/;

export function isSignatureText(text: string): boolean {
  return SIGNATURE.test(text);
}
