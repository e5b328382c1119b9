import { chmod, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDb } from '../src/adapters/postgres/index.js';
import { createCoreServices } from '../src/app/wiring-core.js';
import { loadConfig } from '../src/config/index.js';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { freePort, freePortPair } from '../src/devstack/free-port.js';
import { redisAnswers } from '../src/devstack/redis.devstack.js';
import { createLogger } from '../src/logger.js';
import { closeBooks, type Check } from './chaos-books.js';
import { faults, type Targets } from './chaos-faults.js';
import { ChaosLoad } from './chaos-load.js';
import {
  signal,
  startLogged,
  stopAllUnder,
  waitForOutput,
  waitGone,
  type Started,
} from './chaos-processes.js';
import { printReport, windowRow, type WindowRow } from './chaos-report.js';
import { fundedMembers } from './funded-accounts.js';
import { runBench, type Bench } from './runner.js';

/**
 * `npm run chaos` (issue 22, items 2-3): the service as a user runs it (a child `node --import tsx
 * src/main.ts` on a fresh DATA_DIR), a steady mixed load of careful clients, and six faults one
 * after another with a quiet settle between; then the books must close. `--short` (or
 * CHAOS_SHORT=1) for a quick run; CHAOS_FAULT_SECONDS / CHAOS_SETTLE_SECONDS override.
 *
 * Two departures from the plain embedded defaults, both so a fault can be played: the localnet
 * runs as its own child (`npm run localnet`, stopped and restarted on the same data), and Redis is
 * a redis-server started here (the service would otherwise share the machine's Redis on 6379,
 * which must not be killed), with the same arguments the service's own would get.
 */
const short = process.argv.includes('--short') || process.env.CHAOS_SHORT === '1';
const FAULT_MS = 1_000 * Number(process.env.CHAOS_FAULT_SECONDS ?? (short ? 6 : 20));
const SETTLE_MS = 1_000 * Number(process.env.CHAOS_SETTLE_SECONDS ?? (short ? 10 : 20));
const MEMBERS = 12;
const FUNDED_MICRO = 400_000_000n;
const CLIENTS = 8;
const PAUSE_MS = 100;
const WRITE_TIMEOUT_MS = 10_000;
/** A request unanswered this long hangs: WRITE_TIMEOUT_MS plus the time a 202 may take to write. */
const CLIENT_TIMEOUT_MS = WRITE_TIMEOUT_MS + 5_000;
const RECOVERY_TARGET_MS = 10_000;
const REDIS_PREFIX = 'lf';

async function main(bench: Bench): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'ledgerfeed-chaos-'));
  await chmod(root, 0o755); // the embedded Postgres runs as the OS user `postgres`
  const dataDir = path.join(root, 'service');
  const chainDir = path.join(root, 'chain');
  // Logs outside the run's folder: they are the evidence of a failure and outlive the clean-up.
  const logDir = await mkdtemp(path.join(os.tmpdir(), 'ledgerfeed-chaos-logs-'));
  for (const dir of [dataDir, chainDir, path.join(root, 'redis')]) await mkdir(dir, { recursive: true });
  const basePath = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' };
  let service: Started | undefined;
  let localnet: Started | undefined;
  console.log(
    `chaos: DATA_DIR ${root} (logs in ${logDir}); faults ${FAULT_MS / 1000} s, settle ${SETTLE_MS / 1000} s`,
  );
  bench.defer(async () => {
    // Ctrl-C for the service (it stops its own Postgres), then whatever is left under the folder.
    if (service && service.child.exitCode === null && service.child.signalCode === null) {
      signal(service.pid, 'SIGINT', true);
      if (!(await waitGone(service.pid, 40_000))) signal(service.pid, 'SIGKILL', true);
    }
    if (localnet) signal(localnet.pid, 'SIGTERM');
    const left = await stopAllUnder(root, 'SIGTERM', 15_000);
    if (left.length > 0)
      console.log(`chaos: stopped ${left.length} leftover process(es): ${left.join(', ')}`);
    await rm(root, { recursive: true, force: true }).catch(() => {});
  });
  const redisPort = await freePort();
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  startLogged(
    'redis-server',
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--dir', path.join(root, 'redis')].concat([
      '--appendonly',
      'yes',
      '--save',
      '60 1',
    ]),
    { env: basePath, logFile: path.join(logDir, 'redis.log') },
  );
  const redisDeadline = Date.now() + 30_000;
  while (!(await redisAnswers(redisUrl, 200))) {
    if (Date.now() > redisDeadline) throw new Error('redis-server did not start');
    await sleep(50);
  }

  const localnetPort = await freePortPair();
  const rpcUrl = `http://127.0.0.1:${localnetPort}`;
  const startLocalnet = async () => {
    localnet = startLogged(process.execPath, ['--import', 'tsx', 'src/cli/localnet.ts'], {
      env: { ...basePath, DATA_DIR: chainDir, LOCALNET_PORT: String(localnetPort), LOG_LEVEL: 'warn' },
      logFile: path.join(logDir, 'localnet.log'),
    });
    await waitForOutput(localnet, 'Press Ctrl-C to stop.', 60_000);
  };
  await startLocalnet();

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const startService = async () => {
    service = startLogged(
      process.execPath,
      ['--import', 'tsx', '--import', './bench/chaos-clickhouse-fault.ts', 'src/main.ts'],
      {
        env: {
          ...basePath,
          DATA_DIR: dataDir,
          HOST: '127.0.0.1',
          PORT: String(port),
          REDIS_URL: redisUrl,
          REDIS_PREFIX,
          SOLANA_RPC_URL: rpcUrl,
          RATE_LIMIT_MULTIPLIER: '0',
          WRITE_TIMEOUT_MS: String(WRITE_TIMEOUT_MS),
          LOG_LEVEL: 'warn',
        },
        logFile: path.join(logDir, 'service.log'),
      },
    );
    await waitForOutput(service, 'Press Ctrl-C to stop.', 180_000);
  };
  await startService();
  const stackPostgresUrl = () => stackState.postgres;
  let stackState = await readStack(dataDir);

  // Accounts, keys and money, as `npm run cli` would make them beside the running service.
  const config = loadConfig({ DATA_DIR: dataDir, SOLANA_RPC_URL: rpcUrl, LOG_LEVEL: 'warn' });
  const logger = createLogger(config);
  let db = createDb(stackState.postgres, { max: 4 });
  let core = createCoreServices(config, logger, db, rpcUrl);
  const platform = await core.bootstrapChain();
  const members = await fundedMembers({ app: core, platform }, MEMBERS, FUNDED_MICRO);
  const finance = await createAccount(core, { handle: `chaos_fin_${Date.now() % 1e6}`, role: 'finance' });
  const financeKey = (await createApiKey(core.apiKeys, finance.id)).key;
  await db.destroy();
  const runStartedAt = new Date();

  const load = new ChaosLoad(members, () => base, CLIENT_TIMEOUT_MS);
  bench.defer(() => load.stop().catch(() => {})); // runs before the processes are stopped
  load.start(CLIENTS, PAUSE_MS);
  const rows: WindowRow[] = [];
  let from = Date.now();
  await sleep(SETTLE_MS);
  rows.push(windowRow('steady (before faults)', load.attempts, from, Date.now(), undefined));

  const targets: Targets = {
    redisUrl,
    logDir,
    postgresDir: path.join(dataDir, 'postgres'),
    service: () => service!,
    restartService: async () => {
      await startService();
      stackState = await readStack(dataDir);
    },
    localnet: () => localnet!,
    restartLocalnet: startLocalnet,
    stackPostgresUrl,
  };
  for (const fault of faults(targets)) {
    console.log(`chaos: ${fault.name} for ${FAULT_MS / 1000} s`);
    from = Date.now();
    const { backAt } = await fault.inject(FAULT_MS);
    await sleep(SETTLE_MS);
    rows.push(windowRow(fault.name, load.attempts, from, Date.now(), backAt));
  }
  await load.stop();
  console.log('chaos: load stopped; closing the books');

  stackState = await readStack(dataDir);
  db = createDb(stackState.postgres, { max: 4 });
  core = createCoreServices(config, logger, db, rpcUrl);
  const gql = async (query: string, variables: Record<string, unknown>) => {
    const response = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${financeKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(30_000),
    });
    return (await response.json()) as { data?: unknown; errors?: unknown[] };
  };
  let checks: Check[];
  try {
    checks = await closeBooks(
      { db, rpc: core.rpc, ledger: core.ledger, platform, redisUrl, redisPrefix: REDIS_PREFIX, gql },
      members,
      FUNDED_MICRO,
      load.writes,
      runStartedAt,
    );
  } finally {
    core.watcher.close();
    await db.destroy();
  }
  bench.check(printReport(rows, checks, RECOVERY_TARGET_MS));
}

async function readStack(dataDir: string): Promise<{ postgres: string }> {
  const state = JSON.parse(await readFile(path.join(dataDir, 'stack.json'), 'utf8')) as { postgres?: string };
  if (!state.postgres) throw new Error('stack.json names no Postgres');
  return { postgres: state.postgres };
}

runBench(main);
