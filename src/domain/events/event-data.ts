import type { MovementKind } from '../ledger/ledger.js';
import { transactionTypeOf } from '../ledger/transaction-history.js';
import { formatNativeUnits } from '../money/native.js';
import { formatMicroUsd } from '../money/usd.js';

/**
 * The public `data` of an event from what its change staged. The change stages raw facts in SQL
 * (amounts as micro-USD text, the movement's kind); here they take the form the history answers,
 * so a payment event and the history entry of the same money move say the same thing:
 * `kind` is the history's type (post, earn, send, receive, swap, refund, ...), `amount_usd` is
 * signed dollars as a JSON number (negative when the account spent).
 */
export function publicEventData(type: string, staged: Record<string, unknown>): Record<string, unknown> {
  if (type.startsWith('payment.')) return paymentData(staged);
  if (type === 'send.received') {
    const { amount_micro: amount, ...rest } = staged;
    return { ...rest, amount_usd: usd(micro(amount)) };
  }
  return staged;
}

function paymentData(staged: Record<string, unknown>): Record<string, unknown> {
  const amount = micro(staged.amount_micro);
  const native = micro(staged.native_amount);
  const movementKind = staged.movement_kind as MovementKind;
  // A creator-fund payout moves native tokens only: spent or earned is read from them.
  const spent = amount < 0n || (amount === 0n && native < 0n);
  return {
    swap_tx: staged.swap_tx ?? null,
    kind: transactionTypeOf(movementKind, spent),
    amount_usd: usd(amount),
    ...(native !== 0n ? { native_tokens: formatNativeUnits(native) } : {}),
    related_post_id: staged.related_post_id ?? null,
    counterparty: staged.counterparty ?? null,
    slot: staged.slot ?? null,
  };
}

/** An amount staged by SQL as text (a bigint as JSON would be read back as a float). */
function micro(value: unknown): bigint {
  return typeof value === 'string' || typeof value === 'number' ? BigInt(value) : 0n;
}

function usd(amount: bigint): number {
  return Number(formatMicroUsd(amount));
}
