/**
 * The double-entry ledger's vocabulary. Amounts are bigint micro-USD (= USDC base units); a
 * movement's legs always sum to zero, and no user balance ever goes below zero.
 */
export type LedgerAccountKind = 'user' | 'treasury' | 'creator_fund' | 'fee_pool' | 'swap_pool' | 'external';

/** Platform accounts exist once each; `external` is the world outside the ledger (deposits come from it). */
export type PlatformLedgerKind = Exclude<LedgerAccountKind, 'user'>;

export type LedgerAccountRef = { kind: 'user'; accountId: string } | { kind: PlatformLedgerKind };

/**
 * How a leg counts toward a user's all-time totals: `spent` (posts, reposts, sends), `earned`
 * (engagement shares and creator-fund payouts), or neither (deposits, receives, reversals).
 */
export type LegCounts = 'spent' | 'earned' | 'none';

export interface Leg {
  account: LedgerAccountRef;
  /** Signed micro-USD: negative leaves the account, positive enters it. Never 0. */
  amountMicro: bigint;
  counts: LegCounts;
}

export type MovementKind = 'post' | 'repost' | 'send' | 'deposit' | 'earn' | 'reversal';

export class UnbalancedMovementError extends Error {
  override name = 'UnbalancedMovementError';
}

/** Refuses legs that do not balance, carry a zero, or are empty: a bug, never user input. */
export function assertBalanced(legs: readonly Leg[]): void {
  if (legs.length < 2) throw new UnbalancedMovementError('a movement needs at least two legs');
  if (legs.some((leg) => leg.amountMicro === 0n)) throw new UnbalancedMovementError('a leg of zero');
  const sum = legs.reduce((total, leg) => total + leg.amountMicro, 0n);
  if (sum !== 0n) throw new UnbalancedMovementError(`legs sum to ${sum}, not 0`);
}

/** Price of a post, reply, quote or repost: $1 (configurable later), in micro-USD. */
export const ENGAGEMENT_PRICE_MICRO = 1_000_000n;
/** Share of a reply/quote/repost price paid to the parent author, in basis points (50%). */
export const PARENT_AUTHOR_SHARE_BPS = 5_000n;

/**
 * The legs of a paid post, reply, quote or repost: the payer spends the price; for engagement
 * with someone else's post the parent author earns their share in the same movement, the
 * treasury the rest. Engaging with one's own post pays nothing to oneself (all to the treasury).
 */
export function paidEngagementLegs(
  payerId: string,
  parentAuthorId: string | undefined,
  priceMicro = ENGAGEMENT_PRICE_MICRO,
): Leg[] {
  const legs: Leg[] = [
    { account: { kind: 'user', accountId: payerId }, amountMicro: -priceMicro, counts: 'spent' },
  ];
  const share =
    parentAuthorId && parentAuthorId !== payerId ? (priceMicro * PARENT_AUTHOR_SHARE_BPS) / 10_000n : 0n;
  if (share > 0n)
    legs.push({
      account: { kind: 'user', accountId: parentAuthorId! },
      amountMicro: share,
      counts: 'earned',
    });
  legs.push({ account: { kind: 'treasury' }, amountMicro: priceMicro - share, counts: 'none' });
  assertBalanced(legs);
  return legs;
}

/**
 * The legs that undo a movement (an on-chain failure): every leg negated with the same counting,
 * so the payer's total_spent and the author's total_earned drop back too.
 */
export function reversalLegs(legs: readonly Leg[]): Leg[] {
  return legs.map((leg) => ({ account: leg.account, amountMicro: -leg.amountMicro, counts: leg.counts }));
}

/**
 * The legs of a USDC send between two users: the sender spends the amount, the recipient
 * receives it (counted neither earned nor spent: a gift is not income from engagement).
 */
export function sendLegs(senderId: string, recipientId: string, amountMicro: bigint): Leg[] {
  const legs: Leg[] = [
    { account: { kind: 'user', accountId: senderId }, amountMicro: -amountMicro, counts: 'spent' },
    { account: { kind: 'user', accountId: recipientId }, amountMicro, counts: 'none' },
  ];
  assertBalanced(legs);
  return legs;
}
