import path from 'node:path';
import type { Config } from '../config/index.js';
import type { ClickHouseTarget } from '../adapters/clickhouse/clickhouse.js';
import { resolveClickHouse } from './clickhouse.devstack.js';
import { startEmbeddedPostgres } from './postgres.devstack.js';
import { redisAnswers, startLocalRedis } from './redis.devstack.js';
import { noStop, type ServiceHandle } from './service-handle.js';
import { startSolana, websocketUrlOf, type SolanaHandle } from './solana.devstack.js';
import { clearStackState, readLiveStackState, writeStackState, type StackState } from './state-file.js';
import { postgresAnswers } from './postgres-probe.js';

export interface Devstack {
  readonly postgres: ServiceHandle;
  readonly redis: ServiceHandle;
  /** Undefined when the caller asked for no ClickHouse (CLI commands that do not need it). */
  readonly clickhouse: ClickHouseTarget | undefined;
  readonly solana: SolanaHandle;
  /** Records what this process owns in DATA_DIR/stack.json (with the API URL once it listens). */
  publish(extra: { api?: string }): void;
  /** Stops what this process started, in reverse order. */
  stop(): Promise<void>;
  /**
   * Just before an exit that does not wait for stop(): tells the servers this process started to
   * shut down on their own (they live in process groups of their own and would outlive it) and
   * removes stack.json. Returns at once.
   */
  abandon(): void;
}

export interface DevstackOptions {
  /** Keep embedded data on stop: true for `npm start`, false for tests. */
  persistent: boolean;
  /**
   * Run the embedded Postgres and redis-server in process groups of their own (`npm start`): a
   * terminal's Ctrl-C then reaches the service only, which finishes its work and stops them last,
   * itself. Off (tests, CLI commands): they share the caller's group and end with its Ctrl-C, which
   * is what a test runner killed by Ctrl-C needs, since it runs no teardown.
   */
  ownProcessGroups?: boolean;
  /** Name of the application database inside an embedded Postgres. */
  database?: string;
  /** false: do not resolve ClickHouse (a CLI command beside a running `npm start` holding chdb). */
  clickhouse?: boolean;
  /** Overrides LOCALNET_PORT (tests pass 0: any free pair of ports). */
  localnetPort?: number;
}

/**
 * Resolves every backing service: the URL from the environment when set, else the one a running
 * Ledgerfeed with the same DATA_DIR already owns, else an embedded one started here. The rest of
 * the application only ever sees URLs and never knows which case it got.
 */
export async function startDevstack(config: Config, options: DevstackOptions): Promise<Devstack> {
  const shared = readLiveStackState(config.dataDir);
  const started: ServiceHandle[] = [];
  const stopStarted = async () => {
    for (const service of started.reverse()) await service.stop();
  };

  try {
    const postgres = await resolveService(config.DATABASE_URL, shared?.postgres, postgresAnswers, () =>
      startEmbeddedPostgres({
        dir: path.join(config.dataDir, 'postgres'),
        database: options.database ?? 'ledgerfeed',
        persistent: options.persistent,
        ownProcessGroup: options.ownProcessGroups ?? false,
      }),
    );
    if (postgres.source === 'embedded') started.push(postgres);

    const redis = await resolveService(config.REDIS_URL, shared?.redis, redisAnswers, () =>
      startLocalRedis({
        dir: path.join(config.dataDir, 'redis'),
        persistent: options.persistent,
        ownProcessGroup: options.ownProcessGroups ?? false,
      }),
    );
    if (redis.source === 'embedded') started.push(redis);

    const clickhouse =
      options.clickhouse === false
        ? undefined
        : resolveClickHouse(config.CLICKHOUSE_URL, config.dataDir, shared);
    const solana: SolanaHandle =
      !config.SOLANA_RPC_URL && shared?.solanaRpc && (await solanaAnswers(shared.solanaRpc))
        ? { url: shared.solanaRpc, wsUrl: websocketUrlOf(shared.solanaRpc), source: 'shared', stop: noStop }
        : await startSolana({
            rpcUrl: config.SOLANA_RPC_URL,
            dataDir: config.dataDir,
            localnetPort: options.localnetPort ?? config.LOCALNET_PORT,
          });
    if (solana.source === 'embedded') started.push(solana);

    return {
      postgres,
      redis,
      clickhouse,
      solana,
      publish: (extra) => {
        const state: StackState = { pid: process.pid, startedAt: new Date().toISOString(), ...extra };
        if (postgres.source === 'embedded') state.postgres = postgres.url;
        if (redis.source === 'embedded') state.redis = redis.url;
        if (clickhouse?.kind === 'chdb') state.chdbPath = clickhouse.path;
        if (solana.source === 'embedded') state.solanaRpc = solana.url;
        writeStackState(config.dataDir, state);
      },
      stop: async () => {
        clearStackState(config.dataDir);
        await stopStarted();
      },
      abandon: () => {
        clearStackState(config.dataDir);
        for (const service of started) service.abandon?.();
      },
    };
  } catch (error) {
    await stopStarted();
    throw error;
  }
}

async function solanaAnswers(rpcUrl: string): Promise<boolean> {
  try {
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getHealth' }),
      signal: AbortSignal.timeout(1_000),
    });
    return ((await response.json()) as { result?: string }).result === 'ok';
  } catch {
    return false;
  }
}

async function resolveService(
  fromEnv: string | undefined,
  fromSharedStack: string | undefined,
  answers: (url: string) => Promise<boolean>,
  startEmbedded: () => Promise<ServiceHandle>,
): Promise<ServiceHandle> {
  if (fromEnv) return { url: fromEnv, source: 'external', stop: noStop };
  if (fromSharedStack && (await answers(fromSharedStack))) {
    return { url: fromSharedStack, source: 'shared', stop: noStop };
  }
  return startEmbedded();
}
