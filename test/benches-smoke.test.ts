import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, expect, test } from 'vitest';
import { runsIn, stopAbandonedServer } from '../src/devstack/abandoned-server.js';

/**
 * Every bench that docs/benchmarks.md names, run once in smoke mode (BENCH_SMOKE=1,
 * bench/bench-settings.ts: tiny sizes, a few seconds, targets printed but not held), so a bench
 * that no longer starts fails `npm test` instead of waiting for the next full run to find it. Each
 * runs as its package.json script does (`tsx bench/<name>.ts`, here `node --import tsx`), in a
 * process group of its own, one after the other (the machine has two cores and other test files
 * run beside this one). A bench still exits 1 when its work fails (a transfer or payment not
 * confirmed, books that do not balance, an answer that is not 2xx), so exit 0 means it ran whole.
 */
interface SmokeBench {
  /** The package.json script, as `npm run <script>` in docs/benchmarks.md. */
  script: string;
  /** Lines a run that did its work prints (its figures and its verdict). */
  figures: RegExp[];
}

const SMOKE_BENCHES: SmokeBench[] = [
  {
    script: 'bench',
    figures: [
      /HTTP, skipPreflight +\d+ in +[\d.]+ s += +\d+ transfers\/s/,
      /in-process chain\.submit +\d+ in/,
      /^PASS: \d+ transfers\/s/m,
    ],
  },
  {
    script: 'bench:write-path',
    figures: [/\d+ confirmed paid posts\/s/, /p50 \d+ ms, p99 +\d+ ms/, /\d+ transactions\/s/, /^PASS: /m],
  },
  {
    script: 'bench:indexer',
    figures: [/\d+ transactions\/s/, /\d+ events\/s/, /p50 +[\d.]+ ms, p99/, /^PASS: reconcile/m],
  },
  {
    script: 'bench:feed',
    figures: [
      /^(PASS|MISS) REST \/feed\?sort=latest +\d+ req\/s = \d+% of plain/m,
      /^(PASS|MISS) GraphQL feed\(LATEST, 20\) +\d+ req\/s/m,
      /^PASS: feed$/m,
    ],
  },
  {
    script: 'bench:read-peer',
    figures: [
      /^median PostGraphile, relation counts +\d+ req\/s/m,
      /^(PASS|MISS) ours REST \/feed\?sort=latest \/ PostGraphile.*: [\d.]+x/m,
      /^PASS: read-peer$/m,
    ],
  },
  {
    script: 'bench:read-under-writes',
    figures: [
      /^(PASS|MISS) GraphQL feed\(LATEST, 20\) +\d+ req\/s = [\d.]+% of plain/m,
      /^(PASS|MISS) +writes, window of/m,
      /^outbox of the run's payments .*\d+ confirmed/m,
      /^PASS: read-under-writes$/m,
    ],
  },
  {
    script: 'bench:write-cost',
    figures: [
      /^service threads, ms per post above idle: /m,
      /^per post: Postgres -?[\d.]+ transactions, Redis -?[\d.]+ commands/m,
      /^RESULT \d+\/s: -?[\d.]+ ms of machine CPU per paid post/m,
      /^PASS: write-cost/m,
    ],
  },
  {
    script: 'bench:write-step',
    figures: [/posts p50 \d+ ms p99 \d+ ms, likes p50 \d+ ms/, /^PASS: write-step/m],
  },
  {
    script: 'bench:webhooks',
    figures: [
      /^(PASS|MISS) commit to receiver 2xx p99 \d+ ms/m,
      /^(PASS|MISS) backlog drain \d+ deliveries\/s/m,
      /^PASS: webhooks$/m,
    ],
  },
  {
    script: 'bench:reconciliation-csv',
    figures: [
      /^ok rows: \d+ downloaded, \d+ in ClickHouse$/m,
      /^(PASS|MISS) service RSS growth \d+ MB/m,
      /^PASS: reconciliation CSV/m,
    ],
  },
  {
    script: 'bench:reports',
    figures: [
      /^(PASS|MISS) wall time [\d.]+ s <= 300 s/m,
      /^(PASS|MISS) service RSS growth \d+ MB <= 256 MB while it runs/m,
      /^ok rows: [\d,]+ in the file, row_count [\d,]+, [\d,]+ legs in Postgres$/m,
      /^ok closing = Postgres balance at .* 0 differ, 0 missing$/m,
      /^PASS: reports over [\d,]+ legs/m,
    ],
  },
  {
    script: 'bench:creator-analytics',
    figures: [
      /^ok ClickHouse: \d+ post_engagement, \d+ creator_earnings, \d+ creator_posts/m,
      /^ok Σ creatorEarnings by source over .* = \d+ micro-USD; Σ of @bench_u0's earned legs in Postgres \d+$/m,
      /^(PASS|MISS) creatorEarnings SOURCE, DAY, 400 days +p50 +\d+ ms, p95 +\d+ ms/m,
      /^(PASS|MISS) audience, 90 days +p50 +\d+ ms, p95 +\d+ ms/m,
      /^PASS: creator analytics over [\d,]+ rows/m,
    ],
  },
  {
    script: 'bench:idle',
    figures: [
      /^followed after [\d.]+ s: follow_queue 0 left/m,
      /^service process tree: [\d.]+ cores/m,
      /^ {2}node \(the service, pid \d+\): [\d.]+; by thread: main [\d.]+/m,
      /^ {2}node resident memory \d+ MB at the start, \d+ MB at the end$/m,
      /^ {2}postgres: [\d.]+; /m,
      /^machine: [\d.]+ cores busy/m,
      /^(PASS|MISS) whole service idle [\d.]+ cores <= 0\.1 \(\d+ followed accounts/m,
      /^PASS: idle with \d+ followed accounts$/m,
    ],
  },
  {
    script: 'bench:follower',
    figures: [
      /^ {2}window [\d.]+ s: \d+ blocks; [\d.]+ RPC requests\/block \([\d.]+ calls\/block\); CPU [\d.]+ ms\/block/m,
      /^ {2}confirmation -> history item: p50 -?\d+ ms, p99 -?\d+ ms/m,
      /^(PASS|MISS) RPC requests per block +[\d.]+ +[\d.]+ +large\/small [\d.]+/m,
      /^(PASS|MISS) follower CPU per block +[\d.]+ ms +[\d.]+ ms +large\/small [\d.]+/m,
      /^(PASS|MISS) p99 confirmation->history +-?\d+ ms +-?\d+ ms/m,
      /^ +old per-address round +[\d.]+ s +[\d.]+ s EXTRAPOLATED from a round at [\d,]+ accounts/m,
      /^PASS: follower [\d,]+ vs [\d,]+ accounts/m,
    ],
  },
];

/** Benches that a test file of their own runs in a short mode already (not run twice). */
const RUN_ELSEWHERE: Record<string, string> = { chaos: 'test/chaos.e2e.test.ts' };

/** A bench whose run takes longer than this is stopped and fails (~30-70 s seen on a busy machine). */
const RUN_LIMIT_MS = 240_000;

const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> })
  .scripts;
const smokeScripts = SMOKE_BENCHES.map((bench) => bench.script);

/** The `npm run ...` commands of docs/benchmarks.md's summary table. */
function documentedBenches(): string[] {
  const text = readFileSync('docs/benchmarks.md', 'utf8');
  return [...text.matchAll(/^\| `npm run ([\w:-]+)`/gm)].map((m) => m[1]!);
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  seconds: number;
  timedOut: boolean;
}

/**
 * Runs a bench's file in smoke mode with none of the caller's BENCH_* settings. A run past
 * RUN_LIMIT_MS is killed with its process group, and the embedded servers it started in groups of
 * their own (the service runs them so) are stopped through their owner records.
 */
function runSmoke(file: string): Promise<Run> {
  const started = performance.now();
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' };
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  env.BENCH_SMOKE = '1';
  // A process group of its own, so a run past its limit is killed whole (load children, the
  // PostGraphile peer). A Ctrl-C of vitest does not reach it: it finishes and cleans up by itself.
  const child = spawn(process.execPath, ['--import', 'tsx', file], {
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }, RUN_LIMIT_MS);
  return new Promise((resolve) => {
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const run = { code, signal, stdout, stderr, seconds: (performance.now() - started) / 1000, timedOut };
      void stopLeftServers(`${stdout}\n${stderr}`).finally(() => resolve(run));
    });
  });
}

/**
 * The embedded Postgres and Redis of a bench that did not stop them (killed, crashed), and its
 * temporary DATA_DIR (bench/bench-service.ts), found by the folder its output names.
 */
async function stopLeftServers(output: string): Promise<void> {
  const dataDirs = new Set(output.match(/\/[\w./-]*\/ledgerfeed-bench-\w+/g) ?? []);
  for (const dir of dataDirs) {
    if (path.dirname(dir) !== os.tmpdir()) continue;
    await stopAbandonedServer(path.join(dir, 'postgres'), runsIn, 'SIGINT').catch(() => {});
    await stopAbandonedServer(path.join(dir, 'redis'), runsIn, 'SIGTERM').catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

const tail = (text: string, chars = 6_000) => (text.length > chars ? `...${text.slice(-chars)}` : text);

describe('every bench starts, runs and exits 0 in smoke mode', () => {
  test('docs/benchmarks.md names no bench that has no smoke run', () => {
    const documented = documentedBenches();
    expect(documented.length).toBeGreaterThanOrEqual(SMOKE_BENCHES.length);
    expect(documented.filter((script) => !smokeScripts.includes(script) && !RUN_ELSEWHERE[script])).toEqual(
      [],
    );
  });

  test('every package.json script that runs a file of bench/ has a smoke run or a test of its own', () => {
    const benchScripts = Object.entries(scripts)
      .filter(([, command]) => /\bbench\//.test(command))
      .map(([name]) => name);
    expect(benchScripts).toEqual(expect.arrayContaining(smokeScripts));
    expect(benchScripts.filter((script) => !smokeScripts.includes(script) && !RUN_ELSEWHERE[script])).toEqual(
      [],
    );
    for (const [script, testFile] of Object.entries(RUN_ELSEWHERE)) {
      const file = scripts[script]?.match(/^tsx (bench\/[\w-]+\.ts)$/)?.[1];
      expect(file, `npm run ${script}`).toBeDefined();
      expect(existsSync(testFile) && readFileSync(testFile, 'utf8').includes(file!), testFile).toBe(true);
    }
  });

  for (const bench of SMOKE_BENCHES) {
    test(
      `npm run ${bench.script} starts, runs and exits 0 in smoke mode`,
      { timeout: RUN_LIMIT_MS + 60_000 },
      async () => {
        const file = scripts[bench.script]?.match(/^tsx (bench\/[\w-]+\.ts)$/)?.[1];
        expect(file, `package.json script ${bench.script}: ${scripts[bench.script]}`).toBeDefined();
        const run = await runSmoke(file!);
        const report =
          `npm run ${bench.script} (BENCH_SMOKE=1): exit ${run.code}${run.signal ? ` (${run.signal})` : ''}` +
          ` after ${run.seconds.toFixed(1)} s${run.timedOut ? `, killed at the limit of ${RUN_LIMIT_MS / 1000} s` : ''}` +
          `\n--- stderr\n${tail(run.stderr)}\n--- stdout\n${tail(run.stdout)}`;
        console.log(`npm run ${bench.script}, smoke mode: ${run.seconds.toFixed(1)} s, exit ${run.code}`);
        expect(run.code, report).toBe(0);
        expect(run.stdout, report).toMatch(/^smoke run \(BENCH_SMOKE=1\)/m);
        for (const figure of bench.figures) expect(run.stdout, report).toMatch(figure);
      },
    );
  }
});
