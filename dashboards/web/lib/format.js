// Money arrives as micro-USD decimal strings; it is formatted with BigInt arithmetic, never a float.

/** "1500000" -> "$1.50"; "-250000" -> "-$0.25". Cents are shown, sub-cent digits only when present. */
export function usd(micro) {
  let value = BigInt(micro);
  const negative = value < 0n;
  if (negative) value = -value;
  const dollars = value / 1_000_000n;
  let fraction = (value % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  const grouped = dollars.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}$${grouped}.${fraction}`;
}

/** A signed decimal dollar string from the API ("-1", "0.5") as money. */
export function usdDecimal(text) {
  const negative = text.startsWith('-');
  const [whole, fraction = ''] = text.replace(/^-/, '').split('.');
  const micro = BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6) || '0');
  return usd((negative ? -micro : micro).toString());
}

/** Micro-USD as a plain number of dollars, for chart axes only (display, not arithmetic). */
export function dollarsForChart(micro) {
  return Number(BigInt(micro)) / 1e6;
}

const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function dateTime(iso) {
  if (!iso) return '—';
  const date = new Date(iso.includes('T') || iso.endsWith('Z') ? iso : `${iso.replace(' ', 'T')}Z`);
  return Number.isNaN(date.getTime()) ? iso : dateTimeFormat.format(date);
}

/** A base58 signature or address shortened for a table: first and last 6 characters. */
export function short(text) {
  return text && text.length > 16 ? `${text.slice(0, 6)}…${text.slice(-6)}` : (text ?? '');
}

/** YYYY-MM-DD of a Date in UTC (ledger days are UTC). */
export function utcDay(date) {
  return date.toISOString().slice(0, 10);
}

// Native tokens have 9 decimals; amounts travel as strings of base units and stay BigInt here.
const TOKEN_DECIMALS = 9;
const UNITS_PER_TOKEN = 10n ** BigInt(TOKEN_DECIMALS);

const group = (digits) => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** Base units ("1234500000000") -> "1,234.5": exact, up to 9 decimals, trailing zeros dropped. */
export function tokens(baseUnits) {
  let value = BigInt(baseUnits);
  const negative = value < 0n;
  if (negative) value = -value;
  const fraction = (value % UNITS_PER_TOKEN).toString().padStart(TOKEN_DECIMALS, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${group((value / UNITS_PER_TOKEN).toString())}${fraction ? `.${fraction}` : ''}`;
}

/** A decimal token string from the API ("12.5") -> "12.5" grouped, via base units (exact). */
export function tokensDecimal(text) {
  return tokens(parseTokens(text.replace(/^-/, ''), { allowZero: true }) * (text.startsWith('-') ? -1n : 1n));
}

/**
 * What a person typed as an amount of tokens ("12.5", ".25", "1000") -> base units (BigInt),
 * exactly. Throws an Error whose message says what to type instead. Thousands separators are
 * refused rather than guessed at ("1,000" is a thousand in one locale and one in another).
 */
export function parseTokens(text, { allowZero = false } = {}) {
  const typed = String(text).trim().replace(/[\s_]/g, '');
  if (typed === '') throw new Error('Enter an amount of tokens.');
  const match = /^(\d*)(?:\.(\d*))?$/.exec(typed);
  if (!match || (match[1] === '' && !match[2])) {
    throw new Error('Enter a plain number such as 12.5 (a dot for decimals, no thousands separators).');
  }
  const decimals = match[2] ?? '';
  if (decimals.length > TOKEN_DECIMALS) {
    throw new Error('At most 9 decimals: the smallest amount is 0.000000001 tokens.');
  }
  const units = BigInt(match[1] || '0') * UNITS_PER_TOKEN + BigInt(decimals.padEnd(TOKEN_DECIMALS, '0'));
  if (units === 0n && !allowZero) throw new Error('Enter an amount above 0.');
  return units;
}

/** Micro-USD -> the decimal dollar text the API takes as input ("1250000" -> "1.25"). */
export function microToDollars(micro) {
  const value = BigInt(micro);
  const fraction = (value % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${value / 1_000_000n}${fraction ? `.${fraction}` : ''}`;
}

/** Basis points -> "0.30%". */
export function percentOfBps(bps) {
  const value = BigInt(bps);
  return `${value / 100n}.${(value % 100n).toString().padStart(2, '0')}%`;
}

/** A typed percentage ("0.5", "1") -> basis points (BigInt); empty -> null. At most 2 decimals. */
export function parsePercentToBps(text, max = 5_000n) {
  const typed = String(text).trim().replace(/%$/, '').trim();
  if (typed === '') return null;
  const match = /^(\d{1,3})(?:\.(\d{1,2}))?$/.exec(typed);
  if (!match) throw new Error('Slippage is a percentage such as 0.5 or 1 (at most 2 decimals).');
  const bps = BigInt(match[1]) * 100n + BigInt((match[2] ?? '').padEnd(2, '0'));
  if (bps > max) throw new Error(`Slippage above ${percentOfBps(max)} is not allowed.`);
  return bps;
}
