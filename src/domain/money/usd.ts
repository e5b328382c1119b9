import { AppError } from '../errors.js';

/** 1 USD = 1,000,000 micro-USD = 1,000,000 USDC base units (USDC has 6 decimals). */
export const MICRO_PER_USD = 1_000_000n;

const DECIMAL_USD = /^(\d{1,12})(?:\.(\d{1,6}))?$/;

/**
 * Parses a decimal dollar amount ("12", "0.01", "1.5") into micro-USD without ever passing
 * through a float. More than 6 decimals, signs, exponents or junk are refused.
 */
export function parseUsdToMicro(text: string): bigint {
  const match = DECIMAL_USD.exec(text.trim());
  if (!match) {
    throw new AppError('invalid_request', `"${text}" is not a dollar amount (digits, at most 6 decimals)`);
  }
  const whole = BigInt(match[1] ?? '0');
  const fraction = BigInt((match[2] ?? '').padEnd(6, '0'));
  return whole * MICRO_PER_USD + fraction;
}

/** micro-USD as a plain decimal string ("1.5", "0.000001"), for people and logs. */
export function formatMicroUsd(micro: bigint): string {
  const sign = micro < 0n ? '-' : '';
  const abs = micro < 0n ? -micro : micro;
  const fraction = (abs % MICRO_PER_USD).toString().padStart(6, '0').replace(/0+$/, '');
  return `${sign}${abs / MICRO_PER_USD}${fraction ? `.${fraction}` : ''}`;
}
