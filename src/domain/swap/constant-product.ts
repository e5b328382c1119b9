/**
 * The swap pool's pricing: a constant-product curve (x * y = k) with a 30 bps fee, in integer
 * base units only. Every rounding favours the pool: the fee is rounded up, the output down. So the
 * pool's product of reserves never decreases and a user never receives more than the exact
 * rational price (test/swap.test.ts checks both against exact fractions with fast-check).
 */

/** The fee, in basis points of the tokens sold: it stays in the pool (the liquidity's income). */
export const SWAP_FEE_BPS = 30n;
const BPS = 10_000n;

/** The pool's balances, read from chain: native-token base units and micro-USD. */
export interface PoolReserves {
  nativeUnits: bigint;
  usdcMicro: bigint;
}

export interface SwapQuote {
  /** Native base units sold (all of them enter the native vault). */
  amountTokens: bigint;
  /** The fee part of `amountTokens` (rounded up): sold, but priced at nothing. */
  feeTokens: bigint;
  /** micro-USD paid out of the USDC vault (rounded down). */
  amountUsdcMicro: bigint;
  /**
   * How much worse than the pool's spot price (before fee) the fee-free part was priced, in basis
   * points, rounded down: the cost of this trade's size against these reserves.
   */
  priceImpactBps: number;
  /** The reserves the quote was priced against, and the reserves it leaves. */
  reservesBefore: PoolReserves;
  reservesAfter: PoolReserves;
}

/**
 * Sells `amountTokens` native base units to the pool: the fee (ceil(amount * 30 / 10000)) is
 * taken first, the rest is priced on the curve: out = floor(net * y / (x + net)). Returns an
 * output of 0 for dust; the caller refuses it. Reserves must be positive.
 */
export function quoteSellNative(reserves: PoolReserves, amountTokens: bigint): SwapQuote {
  const { nativeUnits: x, usdcMicro: y } = reserves;
  if (x <= 0n || y <= 0n) throw new RangeError('the pool has no liquidity');
  if (amountTokens <= 0n) throw new RangeError('the amount must be positive');
  const feeTokens = ceilDiv(amountTokens * SWAP_FEE_BPS, BPS);
  const net = amountTokens - feeTokens;
  const amountUsdcMicro = (net * y) / (x + net);
  // Spot value of the net tokens (y/x each) against what they got: the impact of the trade's size.
  const spotMicroTimesX = net * y;
  const priceImpactBps =
    spotMicroTimesX === 0n ? 0 : Number(((spotMicroTimesX - amountUsdcMicro * x) * BPS) / spotMicroTimesX);
  return {
    amountTokens,
    feeTokens,
    amountUsdcMicro,
    priceImpactBps,
    reservesBefore: { nativeUnits: x, usdcMicro: y },
    reservesAfter: { nativeUnits: x + amountTokens, usdcMicro: y - amountUsdcMicro },
  };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}
