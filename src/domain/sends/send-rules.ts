import { AppError } from '../errors.js';
import { normalizeHandle } from '../accounts/profile-rules.js';
import { formatMicroUsd, parseUsdToMicro } from '../money/usd.js';
import { refusedTextMessage } from '../text/storable-text.js';

/** The smallest send: $0.01 (spec), in micro-USD. */
export const MIN_SEND_MICRO = 10_000n;
/** A memo's length in characters (code points): ours, the spec gives none. */
export const SEND_MEMO_MAX = 200;

export interface SendDraft {
  /** Without the leading @. */
  toHandle: string;
  amountMicro: bigint;
  memo: string | null;
}

const invalid = (field: string, message: string) => new AppError('invalid_request', message, { field });

/**
 * `amount_usd` as micro-USD, exactly: a JSON number is read through its shortest decimal text
 * (`String(n)`, what the sender wrote for any amount with at most 6 decimals), a string must be
 * plain digits; either way the decimal text is parsed without float arithmetic. Exponent
 * notation (1e-7), NaN, Infinity, signs, more than 6 decimals and amounts under $0.01 are refused.
 */
export function parseSendAmount(raw: unknown, field = 'amount_usd'): bigint {
  let text: string;
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw)) throw invalid(field, `${field} must be a finite number of dollars`);
    text = String(raw);
  } else if (typeof raw === 'string') {
    text = raw;
  } else {
    throw invalid(field, `${field} must be a number of dollars (or a string of digits)`);
  }
  if (!/^\d+(\.\d+)?$/.test(text)) {
    throw invalid(
      field,
      `${field} must be a plain decimal number of dollars (no sign or exponent), got ${text}`,
    );
  }
  if (/\.\d{7,}$/.test(text)) throw invalid(field, `${field} must have at most 6 decimals, got ${text}`);
  let micro: bigint;
  try {
    micro = parseUsdToMicro(text);
  } catch {
    throw invalid(field, `${field} must be a dollar amount with at most 6 decimals, got ${text}`);
  }
  if (micro < MIN_SEND_MICRO) {
    throw invalid(field, `${field} must be at least ${formatMicroUsd(MIN_SEND_MICRO)}, got ${text}`);
  }
  return micro;
}

/**
 * A send as a transport hands it over: the amount already read exactly (parseSendAmount, with the
 * transport's field name in its messages).
 */
export interface SendInput {
  /** The recipient, with or without the leading @. */
  toHandle: string;
  amountMicro: bigint;
  memo?: string | null;
}

/** The rules of a send, field by field; messages name the fields as the REST spec does. */
export function validateSendDraft(input: SendInput): SendDraft {
  const rawHandle = input.toHandle;
  if (normalizeHandle(rawHandle) === '') {
    throw invalid('to_handle', 'to_handle must be the recipient handle (without the @)');
  }
  const refusedHandle = refusedTextMessage('to_handle', rawHandle);
  if (refusedHandle) throw invalid('to_handle', refusedHandle);
  if (input.amountMicro < MIN_SEND_MICRO) {
    throw invalid('amount_usd', `amount_usd must be at least ${formatMicroUsd(MIN_SEND_MICRO)}`);
  }
  let memo: string | null = null;
  if (input.memo !== undefined && input.memo !== null) {
    // Shown to the recipient as "Received from @x: <memo>": one line, nothing that reorders it.
    const refusedMemo = refusedTextMessage('memo', input.memo);
    if (refusedMemo) throw invalid('memo', refusedMemo);
    if ([...input.memo].length > SEND_MEMO_MAX) {
      throw invalid('memo', `memo must be at most ${SEND_MEMO_MAX} characters`);
    }
    memo = input.memo === '' ? null : input.memo;
  }
  return { toHandle: normalizeHandle(rawHandle), amountMicro: input.amountMicro, memo };
}

/** The on-chain Memo of a send: `ledgerfeed:send:<id>` and the sender's memo, if any. */
export function sendChainMemo(sendId: string, memo: string | null): string {
  return memo === null ? `ledgerfeed:send:${sendId}` : `ledgerfeed:send:${sendId}:${memo}`;
}
