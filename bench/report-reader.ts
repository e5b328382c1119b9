/**
 * The reader child of `npm run bench:reports` (bench/reports.ts): downloads one report file through
 * `GET /api/v1/reports/{id}/file` and prints what the bench checks, as one JSON line on stdout, so
 * neither the download nor the counting runs in the service's process. Settings from the
 * environment: URL, KEY, MODE (`itemized-csv`, `itemized-parquet`, `summary-csv`) and, for
 * Parquet, FILE (where the download is kept while chdb, in this process, reads it; deleted after).
 *
 * - itemized-csv: data rows, and per `currency|account_kind` the sum of `amount` in base units;
 * - itemized-parquet: the same, counted by chdb over the downloaded file (decimal strings summed as
 *   Decimal128(9));
 * - summary-csv: data rows, each `account|currency`'s `closing` in base units, and the rows whose
 *   opening + type columns differ from their closing.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const DECIMALS: Record<string, number> = { USDC: 6 };
const NATIVE_DECIMALS = 9;

/** A decimal string (`-12.345000`) as base units of `decimals` places. */
export function toUnits(text: string, decimals: number): bigint {
  const negative = text.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? text.slice(1) : text).split('.');
  if (fraction.length > decimals && /[1-9]/.test(fraction.slice(decimals)))
    throw new Error(`${text} has more than ${decimals} places`);
  const units =
    BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.slice(0, decimals).padEnd(decimals, '0'));
  return negative ? -units : units;
}

const decimalsOf = (currency: string) => DECIMALS[currency] ?? NATIVE_DECIMALS;

/** One CSV record's cells (RFC 4180; the files here hold no line break inside a cell). */
export function cells(line: string): string[] {
  if (!line.includes('"')) return line.split(',');
  const out: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      out.push(cell);
      cell = '';
    } else cell += ch;
  }
  out.push(cell);
  return out;
}

async function download(): Promise<Response> {
  const response = await fetch(process.env.URL!, { headers: { authorization: `Bearer ${process.env.KEY}` } });
  if (response.status !== 200 || !response.body)
    throw new Error(`GET ${process.env.URL}: ${response.status} ${await response.text()}`);
  return response;
}

/** Every CRLF-ended record of the body after the header, to `onRecord`; the body's size. */
async function eachRecord(
  onHeader: (header: string[]) => void,
  onRecord: (line: string) => void,
): Promise<number> {
  const response = await download();
  const decoder = new TextDecoder();
  let rest = '';
  let bytes = 0;
  let header = true;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    const lines = (rest + decoder.decode(chunk, { stream: true })).split('\r\n');
    rest = lines.pop()!;
    for (const line of lines) {
      if (header) {
        onHeader(cells(line));
        header = false;
      } else onRecord(line);
    }
  }
  if (rest !== '') throw new Error('the body does not end with CRLF');
  return bytes;
}

async function itemizedCsv() {
  let at = { currency: -1, kind: -1, amount: -1 };
  const sums = new Map<string, bigint>();
  let rows = 0;
  const bytes = await eachRecord(
    (header) => {
      at = {
        currency: header.indexOf('currency'),
        kind: header.indexOf('account_kind'),
        amount: header.indexOf('amount'),
      };
    },
    (line) => {
      const c = cells(line);
      const currency = c[at.currency]!;
      const key = `${currency}|${c[at.kind]}`;
      sums.set(key, (sums.get(key) ?? 0n) + toUnits(c[at.amount]!, decimalsOf(currency)));
      rows++;
    },
  );
  return { rows, bytes, sums: Object.fromEntries([...sums].map(([k, v]) => [k, String(v)])) };
}

async function itemizedParquet() {
  const file = process.env.FILE!;
  const response = await download();
  await pipeline(Readable.fromWeb(response.body as never), createWriteStream(file));
  try {
    const { query } = await import('chdb');
    const groupSums = (settings: string) =>
      query(
        `SELECT currency, account_kind, count() AS n, toString(sum(toDecimal128(amount, 9))) AS total
           FROM file('${file.replace(/'/g, "\\'")}', Parquet) GROUP BY currency, account_kind ${settings}`,
        'JSONEachRow',
      );
    let text: string;
    let reader = 'chdb';
    try {
      text = groupSums('');
    } catch (error) {
      if (process.env.KEEP_FILE)
        await import('node:fs').then((fs) => fs.copyFileSync(file, process.env.KEEP_FILE!));
      console.error(`chdb's default Parquet reader refused the file (${String(error).slice(0, 300)})`);
      text = groupSums('SETTINGS input_format_parquet_use_native_reader_v3 = 0');
      reader = 'chdb, native reader v3 off';
    }
    const groups = text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map(
        (line) =>
          JSON.parse(line) as { currency: string; account_kind: string; n: string | number; total: string },
      );
    const { size } = await import('node:fs').then((fs) => fs.statSync(file));
    const sums: Record<string, string> = {};
    let rows = 0;
    for (const g of groups) {
      rows += Number(g.n);
      const nine = toUnits(g.total, 9);
      const scale = 10n ** BigInt(9 - decimalsOf(g.currency));
      if (nine % scale !== 0n)
        throw new Error(`${g.currency} total ${g.total} has more places than the currency`);
      sums[`${g.currency}|${g.account_kind}`] = String(nine / scale);
    }
    return { rows, bytes: size, sums, reader };
  } finally {
    await rm(file, { force: true });
  }
}

async function summaryCsv() {
  let header: string[] = [];
  const closing: Record<string, string> = {};
  let rows = 0;
  let unbalanced = 0;
  const bytes = await eachRecord(
    (h) => (header = h),
    (line) => {
      const c = cells(line);
      const cell = (name: string) => c[header.indexOf(name)]!;
      const currency = cell('currency');
      const decimals = decimalsOf(currency);
      const from = header.indexOf('opening');
      const to = header.indexOf('closing');
      let sum = 0n;
      for (let i = from; i < to; i++) sum += toUnits(c[i]!, decimals);
      const closed = toUnits(cell('closing'), decimals);
      if (sum !== closed) unbalanced++;
      closing[`${cell('account')}|${currency}`] = String(closed);
      rows++;
    },
  );
  return { rows, bytes, closing, unbalanced };
}

const modes: Record<string, () => Promise<object>> = {
  'itemized-csv': itemizedCsv,
  'itemized-parquet': itemizedParquet,
  'summary-csv': summaryCsv,
};

if (process.env.MODE) {
  const started = performance.now();
  const mode = modes[process.env.MODE];
  if (!mode) throw new Error(`MODE ${process.env.MODE}?`);
  mode()
    .then((result) =>
      console.log(JSON.stringify({ ...result, seconds: (performance.now() - started) / 1000 })),
    )
    .catch((error: unknown) => {
      console.error(String(error));
      process.exit(1);
    });
}
