/**
 * The double-entry ledger's vocabulary. Amounts are bigint base units of the account's currency:
 * micro-USD (= USDC base units) or native-token base units (9 decimals). A movement's legs always
 * sum to zero per currency, and no user balance ever goes below zero.
 */
export type LedgerAccountKind = 'user' | 'treasury' | 'creator_fund' | 'fee_pool' | 'swap_pool' | 'external';

/** Platform accounts exist once each; `external` is the world outside the ledger (deposits come from it). */
export type PlatformLedgerKind = Exclude<LedgerAccountKind, 'user'>;

/** What a ledger account holds: USDC (micro-USD) or the platform's native token (base units). */
export type Currency = 'usdc' | 'native';

/**
 * A ledger account: a user's or a platform kind's, in one currency (absent = 'usdc', the currency
 * of every movement before the native token existed).
 */
export type LedgerAccountRef =
  | { kind: 'user'; accountId: string; currency?: Currency }
  | { kind: PlatformLedgerKind; currency?: Currency };

/** The currency of a ref ('usdc' when unset). */
export const currencyOf = (ref: LedgerAccountRef): Currency => ref.currency ?? 'usdc';

/**
 * How a leg counts toward a user's all-time totals: `spent` (posts, reposts, sends), `earned`
 * (engagement shares and creator-fund payouts), or neither (deposits, receives, reversals).
 */
export type LegCounts = 'spent' | 'earned' | 'none';

export interface Leg {
  account: LedgerAccountRef;
  /**
   * Signed base units of the account's currency (micro-USD for USDC, native base units for a
   * native account): negative leaves the account, positive enters it. Never 0.
   */
  units: bigint;
  counts: LegCounts;
}

export type MovementKind =
  | 'post'
  | 'repost'
  | 'send'
  | 'deposit'
  | 'earn'
  | 'reversal'
  /** Native tokens sold to the swap pool for USDC (both currencies in one movement). */
  | 'swap'
  /** A creator-fund payout batch (native). */
  | 'fund_payout';

export class UnbalancedMovementError extends Error {
  override name = 'UnbalancedMovementError';
}

/**
 * Refuses legs that do not balance per currency, carry a zero, or are empty: a bug, never user
 * input. Currencies never offset each other: 5 native out and 5 USDC in is unbalanced twice.
 */
export function assertBalanced(legs: readonly Leg[]): void {
  if (legs.length < 2) throw new UnbalancedMovementError('a movement needs at least two legs');
  if (legs.some((leg) => leg.units === 0n)) throw new UnbalancedMovementError('a leg of zero');
  const sums = new Map<Currency, bigint>();
  for (const leg of legs) {
    const currency = currencyOf(leg.account);
    sums.set(currency, (sums.get(currency) ?? 0n) + leg.units);
  }
  for (const [currency, sum] of sums) {
    if (sum !== 0n) throw new UnbalancedMovementError(`${currency} legs sum to ${sum}, not 0`);
  }
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
    { account: { kind: 'user', accountId: payerId }, units: -priceMicro, counts: 'spent' },
  ];
  const share =
    parentAuthorId && parentAuthorId !== payerId ? (priceMicro * PARENT_AUTHOR_SHARE_BPS) / 10_000n : 0n;
  if (share > 0n)
    legs.push({
      account: { kind: 'user', accountId: parentAuthorId! },
      units: share,
      counts: 'earned',
    });
  legs.push({ account: { kind: 'treasury' }, units: priceMicro - share, counts: 'none' });
  assertBalanced(legs);
  return legs;
}

/**
 * The legs that undo a movement (an on-chain failure): every leg negated with the same counting,
 * so the payer's total_spent and the author's total_earned drop back too.
 */
export function reversalLegs(legs: readonly Leg[]): Leg[] {
  return legs.map((leg) => ({ account: leg.account, units: -leg.units, counts: leg.counts }));
}

/**
 * The legs of a USDC send between two users: the sender spends the amount, the recipient
 * receives it (counted neither earned nor spent: a gift is not income from engagement).
 */
export function sendLegs(senderId: string, recipientId: string, amountMicro: bigint): Leg[] {
  const legs: Leg[] = [
    { account: { kind: 'user', accountId: senderId }, units: -amountMicro, counts: 'spent' },
    { account: { kind: 'user', accountId: recipientId }, units: amountMicro, counts: 'none' },
  ];
  assertBalanced(legs);
  return legs;
}
