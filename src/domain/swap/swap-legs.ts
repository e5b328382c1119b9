import { assertBalanced, type Leg } from '../ledger/ledger.js';

/**
 * The legs of a swap: the user's native tokens go to the swap pool (native), the pool's USDC goes
 * to the user. Neither counts as spent or earned: a swap exchanges money, it is not engagement.
 */
export function swapLegs(accountId: string, amountTokens: bigint, amountUsdcMicro: bigint): Leg[] {
  const legs: Leg[] = [
    { account: { kind: 'user', accountId, currency: 'native' }, units: -amountTokens, counts: 'none' },
    { account: { kind: 'swap_pool', currency: 'native' }, units: amountTokens, counts: 'none' },
    { account: { kind: 'swap_pool' }, units: -amountUsdcMicro, counts: 'none' },
    { account: { kind: 'user', accountId }, units: amountUsdcMicro, counts: 'none' },
  ];
  assertBalanced(legs);
  return legs;
}
