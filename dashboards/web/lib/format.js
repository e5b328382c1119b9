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
