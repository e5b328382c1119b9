import { describe, expect, test } from 'vitest';
import { AppError } from '../errors.js';
import { insufficientBalance, insufficientBalanceOf } from './insufficient-balance.js';

describe('insufficient balance', () => {
  test('USDC and native refusals read back as they were built; other errors are not refusals', () => {
    const usdc = insufficientBalance('usdc', 250_000n, 1_000_000n);
    expect(usdc.message).toBe('Insufficient balance: $0.25 available, $1 required');
    expect(insufficientBalanceOf(usdc)).toEqual({
      currency: 'usdc',
      available: 250_000n,
      required: 1_000_000n,
    });
    const big = 2n ** 60n;
    const native = insufficientBalance('native', big, big + 1n);
    expect(native.details).toEqual({
      currency: 'native',
      balanceTokens: String(big),
      requiredTokens: String(big + 1n),
    });
    expect(insufficientBalanceOf(native)).toEqual({ currency: 'native', available: big, required: big + 1n });
    expect(insufficientBalanceOf(new AppError('not_found', 'No post'))).toBeUndefined();
  });
});
