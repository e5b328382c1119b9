/**
 * The platform's native token: 9 decimals, amounts in bigint base units end to end. A count of
 * base units can pass 2^53 (9 million tokens), so it travels as a string of digits at the edges.
 */
export const NATIVE_DECIMALS = 9;
export const NATIVE_UNITS_PER_TOKEN = 10n ** BigInt(NATIVE_DECIMALS);

/** Base units as a plain decimal count of tokens ("1.5", "0.000000001"), for people and logs. */
export function formatNativeUnits(units: bigint): string {
  const sign = units < 0n ? '-' : '';
  const abs = units < 0n ? -units : units;
  const fraction = (abs % NATIVE_UNITS_PER_TOKEN)
    .toString()
    .padStart(NATIVE_DECIMALS, '0')
    .replace(/0+$/, '');
  return `${sign}${abs / NATIVE_UNITS_PER_TOKEN}${fraction ? `.${fraction}` : ''}`;
}
