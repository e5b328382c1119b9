/**
 * Report runs over a month of ten million ledger legs:
 *
 *   npm run bench:reports
 *
 * The service (roles api and worker in one process: the worker makes the runs, ClickHouse is the
 * embedded chdb inside that process) on a fresh embedded stack. BENCH_LEGS (10,000,000) ledger
 * legs over the 31 days of the last whole 31-day month are written straight into both stores by
 * bench/reports-seed.ts (Postgres: generate_series in one transaction that moves the shipper's
 * cursor past them; ClickHouse: INSERT ... SELECT FROM numbers(), the shipper's columns, plus the
 * chain transactions and verdicts the reports join), for BENCH_USERS (10,000) users and the
 * platform accounts: paid posts (2 legs), replies, quotes and reposts (3), sends (2), swaps (4),
 * deposits (2), creator-fund payouts (2) and reversals (2), ~2.65 legs a movement.
 *
 * Then three report runs through the real API, one after the other: `ledger.itemized` in CSV and
 * in Parquet and `balance.summary` in CSV for the month (UTC). Each is asked with
 * `POST /api/v1/reports` by a finance key and polled with `GET /api/v1/reports/{id}` until it
 * ends; its wall time is from the POST to the poll that sees `succeeded`. A sampler child reads the
 * service process's VmRSS from /proc/<pid>/status every 50 ms (a child: a busy event loop in the
 * service cannot skip samples); the growth is the peak over the run minus the RSS just before the
 * POST. A reader child (bench/report-reader.ts) then downloads the file through
 * `GET /reports/{id}/file` (its RSS growth printed too) and counts it: CSV rows and sums in
 * JavaScript, Parquet with chdb in the child.
 *
 * Targets (issue "Reports finance can close a month with"): each run **<= 5 minutes** and the
 * service's RSS **+<= 256 MB** while it runs. Checks against Postgres: ledger.itemized's rows (the
 * run's row_count and the file's) = the legs whose movement's created_at is in the month, and the
 * sum of `amount` per currency and account kind = Postgres's; balance.summary: every row's opening
 * + type columns = closing, and closing per account and currency = the sum of the account's legs
 * before the month's end in Postgres, for every account (none missing, none extra).
 * A smoke run (BENCH_SMOKE=1): 20,000 legs, 200 users. BENCH_REPORTS (default
 * `ledger-csv,ledger-parquet,summary-csv`) runs only the reports listed, in that order.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { NATIVE_SYMBOL } from '../src/domain/reports/report-format.js';
import { intSetting, listSetting, SMOKE } from './bench-settings.js';
import { planSeed, seedClickHouse, seededLegs, seedPostgres } from './reports-seed.js';
import { runBench } from './runner.js';

const RUN_LIMIT_SECONDS = 300;
const GROWTH_BOUND_MB = 256;
/** A run not ended after this long is given up (and fails its target). */
const GIVE_UP_SECONDS = 900;

/** The sampler child: VmRSS of PID every 50 ms; a line on stdin closes a window and prints it. */
const SAMPLER = `
const fs = require('node:fs');
const pid = process.env.PID;
const rssKb = () => Number(/VmRSS:\\s+(\\d+)/.exec(fs.readFileSync('/proc/' + pid + '/status', 'utf8'))[1]);
let start = rssKb(), peak = start, samples = 1, last = performance.now(), maxGap = 0;
console.log(JSON.stringify({ rssKb: start }));
setInterval(() => {
  const now = performance.now();
  maxGap = Math.max(maxGap, now - last); last = now;
  const rss = rssKb(); peak = Math.max(peak, rss); samples++;
}, 50);
let buffered = '';
process.stdin.on('data', (chunk) => {
  buffered += chunk;
  while (buffered.includes('\\n')) {
    buffered = buffered.slice(buffered.indexOf('\\n') + 1);
    const rss = rssKb(); peak = Math.max(peak, rss);
    console.log(JSON.stringify({ startKb: start, peakKb: peak, endKb: rss, samples, maxGapMs: Math.round(maxGap) }));
    start = rss; peak = rss; samples = 1; maxGap = 0;
  }
});
process.stdin.on('end', () => process.exit(0));
`;

interface Window {
  startKb: number;
  peakKb: number;
  endKb: number;
  samples: number;
  maxGapMs: number;
}

/** Starts the sampler on `pid`; `window()` closes the current window and answers it. */
async function startSampler(pid: number) {
  const child = spawn(process.execPath, ['-e', SAMPLER], {
    env: { ...process.env, PID: String(pid) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let waiting: ((line: string) => void) | undefined;
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
      const line = buffered.slice(0, i);
      buffered = buffered.slice(i + 1);
      if (waiting) {
        const w = waiting;
        waiting = undefined;
        w(line);
      } else lines.push(line);
    }
  });
  const next = () =>
    new Promise<string>((resolve, reject) => {
      const queued = lines.shift();
      if (queued !== undefined) return resolve(queued);
      waiting = resolve;
      child.once('exit', (code) => reject(new Error(`the RSS sampler exited (${code})`)));
    });
  const first = JSON.parse(await next()) as { rssKb: number };
  return {
    baselineKb: first.rssKb,
    window: async (): Promise<Window> => {
      child.stdin.write('mark\n');
      return JSON.parse(await next()) as Window;
    },
    stop: () => child.stdin.end(),
  };
}

/** Runs the reader child in `mode` on run `id`'s file; its JSON answer. */
function readFile<T>(apiUrl: string, key: string, id: string, mode: string): Promise<T> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(import.meta.dirname, 'report-reader.ts')],
    {
      env: {
        ...process.env,
        URL: `${apiUrl}/api/v1/reports/${id}/file`,
        KEY: key,
        MODE: mode,
        FILE: path.join(os.tmpdir(), `ledgerfeed-bench-report-${id}.parquet`),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.once('close', (code) => {
      if (code !== 0) reject(new Error(`the reader (${mode}) failed (exit ${code}): ${stderr.trim()}`));
      else resolve(JSON.parse(stdout.trim().split('\n').pop()!) as T);
    }),
  );
}

/** The last month of 31 days that ended before now: [start, end) in UTC ms. */
function lastLongMonth(now = Date.now()): { startMs: number; endMs: number; label: string } {
  const d = new Date(now);
  for (let y = d.getUTCFullYear(), m = d.getUTCMonth() - 1; ; m--) {
    const start = Date.UTC(y, m, 1);
    const end = Date.UTC(y, m + 1, 1);
    if (end <= now && end - start === 31 * 86_400_000)
      return { startMs: start, endMs: end, label: new Date(start).toISOString().slice(0, 7) };
  }
}

const symbolOf = (currency: string) => (currency === 'native' ? NATIVE_SYMBOL : 'USDC');
const mb = (kb: number) => kb / 1024;
const fmt = (n: number) => n.toLocaleString('en');

runBench(async (bench) => {
  const targetLegs = intSetting('BENCH_LEGS', 10_000_000, 100, 20_000);
  const users = intSetting('BENCH_USERS', 10_000, 2, 200);
  const month = lastLongMonth();
  const plan = planSeed(targetLegs, users, month.startMs, month.endMs);
  const service = await bench.startService(['api', 'worker']);
  const app = service.app;
  const apiUrl = service.apiUrl!;
  if ((await seededLegs(app.db)) > 0) console.log('(the stack holds legs already: they are counted too)');

  // Seeding, both stores.
  const seeding = performance.now();
  const progress = (text: string) =>
    console.log(`  ${((performance.now() - seeding) / 1000).toFixed(0).padStart(4)} s  ${text}`);
  console.log(
    `seeding ${fmt(plan.legs)} legs of ${fmt(plan.movements)} movements over ${month.label} (31 days), ` +
      `${fmt(users)} users and the platform accounts`,
  );
  const firstLegId = await seedPostgres(app.db, plan, progress);
  const pgSeconds = (performance.now() - seeding) / 1000;
  await seedClickHouse(app.clickhouse, plan, firstLegId, progress);
  console.log(
    `seeded in ${((performance.now() - seeding) / 1000).toFixed(0)} s (Postgres ${pgSeconds.toFixed(0)} s, ` +
      `ClickHouse ${((performance.now() - seeding) / 1000 - pgSeconds).toFixed(0)} s)`,
  );

  // What Postgres says: the month's legs per currency and account kind, and every account's balance at its end.
  const start = new Date(month.startMs);
  const end = new Date(month.endMs);
  const facts = performance.now();
  const { rows: pgLegs } = await sql<{ currency: string; kind: string; n: string; total: string }>`
    SELECT a.currency, a.kind, count(*)::text AS n, sum(l.amount)::text AS total
      FROM ledger_legs l
      JOIN ledger_movements m ON m.id = l.movement_id
      JOIN ledger_accounts a ON a.id = l.ledger_account_id
     WHERE m.created_at >= ${start} AND m.created_at < ${end}
     GROUP BY a.currency, a.kind`.execute(app.db);
  const pgRows = pgLegs.reduce((n, row) => n + Number(row.n), 0);
  const pgSums = new Map(pgLegs.map((row) => [`${symbolOf(row.currency)}|${row.kind}`, row.total]));
  const { rows: pgBalances } = await sql<{
    account: string;
    currency: string;
    balance: string;
    moved: boolean;
  }>`
    SELECT CASE WHEN a.kind = 'user' THEN acc.handle ELSE a.kind END AS account, a.currency,
           sum(l.amount)::text AS balance, bool_or(m.created_at >= ${start}) AS moved
      FROM ledger_legs l
      JOIN ledger_movements m ON m.id = l.movement_id
      JOIN ledger_accounts a ON a.id = l.ledger_account_id
      LEFT JOIN accounts acc ON acc.id = a.account_id
     WHERE m.created_at < ${end}
     GROUP BY 1, 2`.execute(app.db);
  const pgClosing = new Map(
    pgBalances
      .filter((row) => row.balance !== '0' || row.moved)
      .map((row) => [`${row.account}|${symbolOf(row.currency)}`, row.balance]),
  );
  console.log(
    `Postgres: ${fmt(pgRows)} legs in ${month.label}, ${fmt(pgClosing.size)} accounts and currencies ` +
      `with a balance or a movement (${((performance.now() - facts) / 1000).toFixed(0)} s)`,
  );
  if (pgRows !== plan.legs)
    bench.problem(`Postgres holds ${pgRows} legs in the month, the plan ${plan.legs}`);

  const finance = await createAccount(app, { handle: 'bench_books', role: 'finance' });
  const key = (await createApiKey(app.apiKeys, finance.id)).key;
  const api = (route: string, init: RequestInit = {}) =>
    fetch(`${apiUrl}/api/v1${route}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
    });

  const allRuns = {
    'ledger-csv': { type: 'ledger.itemized', format: 'csv', mode: 'itemized-csv' },
    'ledger-parquet': { type: 'ledger.itemized', format: 'parquet', mode: 'itemized-parquet' },
    'summary-csv': { type: 'balance.summary', format: 'csv', mode: 'summary-csv' },
  } as const;
  const runs = listSetting('BENCH_REPORTS', Object.keys(allRuns).join(','), (item) =>
    item in allRuns ? allRuns[item as keyof typeof allRuns] : undefined,
  );
  const results: string[] = [];
  for (const run of runs) {
    const name = `${run.type} ${run.format}`;
    console.log(`\n${name}, ${month.label}:`);
    global.gc?.();
    const sampler = await startSampler(process.pid);
    bench.defer(() => sampler.stop());
    const asked = performance.now();
    const posted = await api('/reports', {
      method: 'POST',
      body: JSON.stringify({
        type: run.type,
        format: run.format,
        timezone: 'UTC',
        interval_start: start.toISOString(),
        interval_end: end.toISOString(),
      }),
    });
    const accepted = (await posted.json()) as { id?: string; message?: string };
    if (posted.status !== 202 || !accepted.id) {
      bench.problem(`POST /reports ${name}: ${posted.status} ${JSON.stringify(accepted)}`);
      sampler.stop();
      continue;
    }
    let state: { status: string; row_count: number | null; bytes: number | null; error: string | null };
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, SMOKE ? 100 : 500));
      state = (await (await api(`/reports/${accepted.id}`)).json()) as typeof state;
      if (state.status === 'succeeded' || state.status === 'failed') break;
      if ((performance.now() - asked) / 1000 > GIVE_UP_SECONDS) break;
    }
    const seconds = (performance.now() - asked) / 1000;
    const during = await sampler.window();
    const growth = mb(during.peakKb - sampler.baselineKb);
    console.log(
      `${bench.target(state.status === 'succeeded' && seconds <= RUN_LIMIT_SECONDS)} wall time ${seconds.toFixed(1)} s <= ${RUN_LIMIT_SECONDS} s ` +
        `(POST to succeeded; status ${state.status}${state.error ? `: ${state.error}` : ''})`,
    );
    console.log(
      `${bench.target(growth <= GROWTH_BOUND_MB)} service RSS growth ${growth.toFixed(0)} MB <= ${GROWTH_BOUND_MB} MB while it runs ` +
        `(${mb(sampler.baselineKb).toFixed(0)} -> peak ${mb(during.peakKb).toFixed(0)} MB, ${fmt(during.samples)} samples, ` +
        `longest gap ${during.maxGapMs} ms)`,
    );
    if (state.status !== 'succeeded') {
      bench.problem(`${name} did not succeed: ${state.status}`);
      sampler.stop();
      results.push(`${name} ${state.status}`);
      continue;
    }

    const reading = performance.now();
    try {
      if (run.mode === 'summary-csv') {
        const file = await readFile<{
          rows: number;
          bytes: number;
          closing: Record<string, string>;
          unbalanced: number;
        }>(apiUrl, key, accepted.id, run.mode);
        const download = await sampler.window();
        console.log(
          `   file ${fmt(file.rows)} rows, ${(file.bytes / 1e6).toFixed(1)} MB; download ${((performance.now() - reading) / 1000).toFixed(1)} s, ` +
            `service RSS ${mb(download.peakKb - sampler.baselineKb).toFixed(0)} MB over the baseline at its peak`,
        );
        const held = bench.check(file.rows === pgClosing.size && state.row_count === file.rows);
        console.log(
          `${held ? 'ok' : 'FAIL'} rows: ${fmt(file.rows)} in the file, row_count ${state.row_count}, ` +
            `${fmt(pgClosing.size)} accounts and currencies in Postgres`,
        );
        const balanced = bench.check(file.unbalanced === 0);
        console.log(
          `${balanced ? 'ok' : 'FAIL'} opening + type columns = closing: ${file.unbalanced} rows differ`,
        );
        let wrong = 0;
        const missing = [...pgClosing.keys()].filter((k) => !(k in file.closing)).length;
        for (const [k, closing] of Object.entries(file.closing)) {
          if ((pgClosing.get(k) ?? '0') !== closing) {
            if (wrong < 5)
              bench.problem(`closing of ${k}: ${closing} in the file, ${pgClosing.get(k)} in Postgres`);
            wrong++;
          }
        }
        const closed = bench.check(wrong === 0 && missing === 0);
        console.log(
          `${closed ? 'ok' : 'FAIL'} closing = Postgres balance at ${end.toISOString()} for all ${fmt(Object.keys(file.closing).length)} ` +
            `accounts and currencies: ${wrong} differ, ${missing} missing`,
        );
        results.push(`${name} ${seconds.toFixed(0)} s +${growth.toFixed(0)} MB`);
      } else {
        const file = await readFile<{ rows: number; bytes: number; sums: Record<string, string> }>(
          apiUrl,
          key,
          accepted.id,
          run.mode,
        );
        const download = await sampler.window();
        console.log(
          `   file ${fmt(file.rows)} rows, ${(file.bytes / 1e6).toFixed(0)} MB; download and count ${((performance.now() - reading) / 1000).toFixed(1)} s, ` +
            `service RSS ${mb(download.peakKb - sampler.baselineKb).toFixed(0)} MB over the baseline at its peak`,
        );
        const held = bench.check(file.rows === pgRows && state.row_count === pgRows);
        console.log(
          `${held ? 'ok' : 'FAIL'} rows: ${fmt(file.rows)} in the file${run.format === 'parquet' ? ' (chdb)' : ''}, ` +
            `row_count ${state.row_count === null ? '-' : fmt(state.row_count)}, ${fmt(pgRows)} legs in Postgres`,
        );
        const keys = new Set([...Object.keys(file.sums), ...pgSums.keys()]);
        const differ = [...keys].filter((k) => (file.sums[k] ?? '0') !== (pgSums.get(k) ?? '0'));
        const summed = bench.check(differ.length === 0);
        console.log(
          `${summed ? 'ok' : 'FAIL'} sum of amount per currency and account kind = Postgres's: ` +
            [...keys]
              .sort()
              .map(
                (k) =>
                  `${k} ${file.sums[k] ?? '-'}${differ.includes(k) ? ` (Postgres ${pgSums.get(k) ?? '-'})` : ''}`,
              )
              .join(', '),
        );
        results.push(`${name} ${seconds.toFixed(0)} s +${growth.toFixed(0)} MB`);
      }
    } catch (error) {
      bench.problem(`${name}: ${String(error)}`);
    } finally {
      sampler.stop();
    }
  }
  return `reports over ${fmt(plan.legs)} legs: ${results.join('; ')}`;
});
