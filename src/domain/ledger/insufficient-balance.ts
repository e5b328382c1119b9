import { AppError } from '../errors.js';
import { formatMicroUsd } from '../money/usd.js';
import { formatNativeUnits } from '../money/native.js';
import type { Currency } from './ledger.js';

/**
 * The refusal of a movement that would take a balance below zero, built here for every store and
 * read back by every transport. Its details keep the names clients already see (GraphQL puts them
 * in `extensions`): USDC as micro-USD strings, the native token as base units (a 9-decimal amount
 * can pass 2^53), under names that say the unit.
 */
export type InsufficientBalance =
  | { currency: 'usdc'; available: bigint; required: bigint }
  | { currency: 'native'; available: bigint; required: bigint };

export function insufficientBalance(currency: Currency, available: bigint, required: bigint): AppError {
  if (currency === 'native') {
    return new AppError(
      'insufficient_balance',
      `Insufficient native token balance: ${formatNativeUnits(available)} available, ${formatNativeUnits(required)} required`,
      { currency: 'native', balanceTokens: available.toString(), requiredTokens: required.toString() },
    );
  }
  return new AppError(
    'insufficient_balance',
    `Insufficient balance: $${formatMicroUsd(available)} available, $${formatMicroUsd(required)} required`,
    { balanceMicro: available.toString(), requiredMicro: required.toString() },
  );
}

/** What an insufficient_balance error says, or undefined for any other error. */
export function insufficientBalanceOf(error: AppError): InsufficientBalance | undefined {
  if (error.code !== 'insufficient_balance') return undefined;
  const { balanceMicro, requiredMicro, balanceTokens, requiredTokens } = error.details;
  if (typeof balanceMicro === 'string' && typeof requiredMicro === 'string') {
    return { currency: 'usdc', available: BigInt(balanceMicro), required: BigInt(requiredMicro) };
  }
  if (typeof balanceTokens === 'string' && typeof requiredTokens === 'string') {
    return { currency: 'native', available: BigInt(balanceTokens), required: BigInt(requiredTokens) };
  }
  return undefined;
}
