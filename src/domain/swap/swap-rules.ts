import { AppError } from '../errors.js';
import { formatNativeUnits, NATIVE_UNITS_PER_TOKEN } from '../money/native.js';
import { parseUsdToMicro } from '../money/usd.js';

/**
 * The largest sale in one swap: 10^18 base units (one billion tokens at 9 decimals). Well inside a
 * Postgres bigint and an SPL u64, and above any pool this platform seeds; a bigger amount is a
 * typo or an attack, refused as invalid_request.
 */
export const MAX_SWAP_TOKENS = 1_000_000_000n * NATIVE_UNITS_PER_TOKEN;

const invalid = (field: string, message: string) => new AppError('invalid_request', message, { field });

/**
 * `amount_tokens`: an integer count of native base units, 1 to MAX_SWAP_TOKENS. A JSON number must
 * be a safe integer (above 2^53 a JSON number has already lost digits, so those must come as a
 * string); a string must be plain digits. Signs, decimals, exponents and junk are refused.
 */
export function parseAmountTokens(raw: unknown, field = 'amount_tokens'): bigint {
  let text: string;
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw)) {
      throw invalid(
        field,
        `${field} must be an integer number of base units; above 2^53 send it as a string of digits`,
      );
    }
    text = String(raw);
  } else if (typeof raw === 'string') {
    text = raw;
  } else {
    throw invalid(field, `${field} is required: an integer count of native base units (number or string)`);
  }
  if (!/^\d{1,30}$/.test(text)) {
    throw invalid(
      field,
      `${field} must be a positive integer count of native base units, got ${text.slice(0, 40)}`,
    );
  }
  const units = BigInt(text);
  if (units <= 0n) throw invalid(field, `${field} must be above 0`);
  if (units > MAX_SWAP_TOKENS) {
    throw invalid(
      field,
      `${field} must be at most ${MAX_SWAP_TOKENS} base units (${formatNativeUnits(MAX_SWAP_TOKENS)} tokens)`,
    );
  }
  return units;
}

/**
 * `min_amount_usdc`: the least USDC the caller accepts, in dollars (a JSON number read through its
 * decimal text, or a string of digits), at most 6 decimals, 0 allowed. Absent or null: no bound.
 */
export function parseMinAmountUsdc(raw: unknown, field = 'min_amount_usdc'): bigint | null {
  if (raw === undefined || raw === null) return null;
  let text: string;
  if (typeof raw === 'number' && Number.isFinite(raw)) text = String(raw);
  else if (typeof raw === 'string') text = raw;
  else throw invalid(field, `${field} must be a number of dollars (or a string of digits)`);
  if (!/^\d{1,12}(\.\d{1,6})?$/.test(text)) {
    throw invalid(
      field,
      `${field} must be a plain decimal number of dollars with at most 6 decimals, got ${text.slice(0, 40)}`,
    );
  }
  return parseUsdToMicro(text);
}

export interface SwapDraft {
  amountTokens: bigint;
  minAmountUsdcMicro: bigint | null;
}

/** The body of POST /swap-to-usdc: `{amount_tokens, min_amount_usdc?}`. */
export function validateSwapDraft(body: unknown): SwapDraft {
  const input = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  return {
    amountTokens: parseAmountTokens(input.amount_tokens),
    minAmountUsdcMicro: parseMinAmountUsdc(input.min_amount_usdc),
  };
}
