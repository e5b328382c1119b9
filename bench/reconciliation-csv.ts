/**
 * What streaming a day's reconciliation CSV costs the service's memory:
 *
 *   npm run bench:reconciliation-csv
 *
 * The service (roles api and worker, so ClickHouse is the embedded chdb inside its process) on a
 * fresh embedded stack. BENCH_ROWS (1,000,000) verdicts of one day are written straight into its
 * ClickHouse `reconciliation` table (INSERT ... SELECT from numbers(), in batches of 100,000, as
 * the reconciler's rows would look), then a child process downloads
 * `GET /api/v1/finance/reconciliation?date=` with `Accept: text/csv` through the real HTTP route,
 * reading at most BENCH_READ_MB_PER_SECOND (32) MB/s, while the service process samples its own
 * RSS every 20 ms. Figure: the RSS growth over the download (peak minus the RSS just before the
 * request), target **< 256 MB** (issue "Reports finance can close a month with", item 2). Before,
 * the route built the day's CSV in memory and stopped at 100,000 rows. Checks: the download ends
 * cleanly with one row per verdict ClickHouse holds and the ledger amounts add up to its sum.
 * A smoke run (BENCH_SMOKE=1): 20,000 rows, no read limit.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { intSetting, SMOKE } from './bench-settings.js';
import { runBench } from './runner.js';

const DAY = '2026-11-20';
const GROWTH_BOUND_MB = 256;
const BATCH = 100_000;

/** The reader child: downloads the CSV at a capped rate, counts rows and adds the ledger amounts. */
const READER = `
const { setTimeout: sleep } = require('node:timers/promises');
const limit = Number(process.env.READ_BYTES_PER_SECOND);
const toMicro = (usd) => {
  const [whole, fraction = ''] = usd.replace('-', '').split('.');
  const micro = BigInt(whole) * 1000000n + BigInt(fraction.padEnd(6, '0'));
  return usd.startsWith('-') ? -micro : micro;
};
(async () => {
  const started = performance.now();
  const response = await fetch(process.env.URL, {
    headers: { authorization: 'Bearer ' + process.env.KEY, accept: 'text/csv' },
  });
  if (response.status !== 200) throw new Error('status ' + response.status + ': ' + (await response.text()));
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let bytes = 0, rows = -1, ledgerMicro = 0n, rest = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
    const lines = (rest + decoder.decode(value, { stream: true })).split('\\r\\n');
    rest = lines.pop();
    for (const line of lines) {
      if (rows >= 0) ledgerMicro += toMicro(line.split(',')[4]);
      rows += 1;
    }
    const ahead = bytes / limit - (performance.now() - started) / 1000;
    if (limit > 0 && ahead > 0) await sleep(ahead * 1000);
  }
  if (rest !== '') throw new Error('the body does not end with CRLF');
  const seconds = (performance.now() - started) / 1000;
  console.log(JSON.stringify({ rows, bytes, ledgerMicro: String(ledgerMicro), seconds }));
})().catch((error) => { console.error(String(error)); process.exit(1); });
`;

runBench(async (bench) => {
  const rows = intSetting('BENCH_ROWS', 1_000_000, 1, 20_000);
  const readMbPerSecond = intSetting('BENCH_READ_MB_PER_SECOND', 32, 0, 0);
  const service = await bench.startService(['api', 'worker']);
  const app = service.app;
  const ch = app.clickhouse;

  const seeding = performance.now();
  for (let start = 0; start < rows; start += BATCH) {
    await ch.client.command({
      query: `INSERT INTO ${ch.table('reconciliation')}
                (movement_id, signature, ledger_day, status, ledger_amount, chain_amount, commitment, detail, checked_at)
              SELECT generateUUIDv4(), concat('bench', toString(number), repeat('x', 78)), toDate('${DAY}'),
                     if(number % 100 = 0, 'amount_mismatch', 'matched'), 1000000 + number % 1000,
                     if(number % 100 = 0, 600000, 1000000 + number % 1000), 'finalized', '',
                     toDateTime64('${DAY} 12:00:00', 3, 'UTC')
                FROM numbers(${start}, ${Math.min(BATCH, rows - start)})`,
    });
  }
  const heldResult = await ch.client.query({
    query: `SELECT count() AS n, toString(sum(ledger_amount)) AS ledger
              FROM ${ch.table('reconciliation')} FINAL WHERE ledger_day = {day:Date}`,
    query_params: { day: DAY },
    format: 'JSONEachRow',
  });
  const [held] = await heldResult.json<{ n: string; ledger: string }>();
  console.log(
    `seeded ${Number(held!.n).toLocaleString('en')} verdicts of ${DAY} in ${((performance.now() - seeding) / 1000).toFixed(1)} s`,
  );

  const finance = await createAccount(app, { handle: 'bench_books', role: 'finance' });
  const key = (await createApiKey(app.apiKeys, finance.id)).key;

  // The service's RSS just before the request, then every 20 ms while the child downloads.
  global.gc?.();
  const mb = (bytes: number) => bytes / 1024 / 1024;
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 20);
  bench.defer(() => clearInterval(sampler));
  const child = spawn(process.execPath, ['-e', READER], {
    env: {
      ...process.env,
      URL: `${service.apiUrl}/api/v1/finance/reconciliation?date=${DAY}`,
      KEY: key,
      READ_BYTES_PER_SECOND: String(readMbPerSecond * 1024 * 1024),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  if (code !== 0) {
    bench.problem(`the download failed (exit ${code}): ${stderr.trim()}`);
    return 'reconciliation CSV';
  }
  const download = JSON.parse(stdout) as {
    rows: number;
    bytes: number;
    ledgerMicro: string;
    seconds: number;
  };
  const growth = mb(peak - before);
  console.log(
    `downloaded ${download.rows.toLocaleString('en')} rows, ${mb(download.bytes).toFixed(0)} MB in ${download.seconds.toFixed(1)} s` +
      (readMbPerSecond > 0 && !SMOKE ? ` (reader capped at ${readMbPerSecond} MB/s)` : ''),
  );
  const rowsHeld = bench.check(download.rows === Number(held!.n));
  console.log(`${rowsHeld ? 'ok' : 'FAIL'} rows: ${download.rows} downloaded, ${held!.n} in ClickHouse`);
  const sumHeld = bench.check(download.ledgerMicro === held!.ledger);
  console.log(
    `${sumHeld ? 'ok' : 'FAIL'} ledger sum: ${download.ledgerMicro} micro-USD downloaded, ${held!.ledger} in ClickHouse`,
  );
  console.log(
    `${bench.target(growth < GROWTH_BOUND_MB)} service RSS growth ${growth.toFixed(0)} MB (${mb(before).toFixed(0)} -> ${mb(peak).toFixed(0)} MB) < ${GROWTH_BOUND_MB} MB`,
  );
  return `reconciliation CSV, ${download.rows} rows, RSS +${growth.toFixed(0)} MB`;
});
