import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { inject } from 'vitest';
import type { ClickHouseTarget } from '../../src/adapters/clickhouse/index.js';
import { openApp, type App } from '../../src/app/wiring.js';
import { loadConfig, type Config } from '../../src/config/index.js';
import type { ServiceEndpoints } from '../../src/app/service-endpoints.js';
import { startLocalnet, type Localnet } from '../../src/localnet/localnet.js';
import { databaseUrl } from './urls.js';

export interface TestEnv {
  app: App;
  config: Config;
  /** Unique per test file: database names, Redis prefix, ClickHouse database. */
  id: string;
  /** The in-memory localnet, when the file asked for a chain (as itself or as a plain validator). */
  localnet: Localnet | undefined;
  close(): Promise<void>;
}

/**
 * An isolated world for one test file: its own Postgres database (copied from the migrated
 * template), its own Redis key prefix and its own ClickHouse database (migrated here), all removed
 * by close().
 */
export async function openTestEnv(
  overrides: Record<string, string> = {},
  options: {
    chain?: boolean | 'plain-validator';
    clickhouse?: false;
    /** Keep the localnet's state in this folder (in memory otherwise). */
    localnetDir?: string;
    /** The localnet's slot length. @defaultValue 100 */
    slotMs?: number;
  } = {},
): Promise<TestEnv> {
  const id = `t${randomBytes(5).toString('hex')}`;
  const serverUrl = inject('postgresUrl');
  await withAdmin(serverUrl, (admin) =>
    admin.query(
      `CREATE DATABASE ${pg.escapeIdentifier(id)} TEMPLATE ${pg.escapeIdentifier(inject('postgresTemplate'))}`,
    ),
  );

  const clickhouseUrl = inject('clickhouseUrl');
  const clickhouse: ClickHouseTarget = clickhouseUrl
    ? { kind: 'http', url: clickhouseUrl }
    : // chdb: one folder per test process (vitest forks), one database per file.
      { kind: 'chdb', path: path.join(inject('dataRoot'), `chdb-${process.pid}`) };

  const config = loadConfig({
    NODE_ENV: 'test',
    DATA_DIR: path.join(inject('dataRoot'), id),
    DATABASE_URL: databaseUrl(serverUrl, id),
    REDIS_URL: inject('redisUrl'),
    REDIS_PREFIX: id,
    CLICKHOUSE_DATABASE: id,
    ...(clickhouseUrl ? { CLICKHOUSE_URL: clickhouseUrl } : {}),
    // No scheduled creator-fund payouts in the middle of other tests' ledgers (an epoch boundary
    // could pass during any test); the creator-fund tests run epochs themselves.
    CREATOR_FUND_ENABLED: 'false',
    ...overrides,
  });
  // A chain only for files that need one: an in-memory localnet on free ports, fast slots.
  const localnet = options.chain
    ? await startLocalnet({
        port: 0,
        slotMs: options.slotMs ?? 100,
        plainValidator: options.chain === 'plain-validator',
        dir: options.localnetDir,
      })
    : undefined;
  const stack: ServiceEndpoints = {
    postgres: { url: config.DATABASE_URL ?? '', source: 'external' },
    redis: { url: inject('redisUrl'), source: 'external' },
    clickhouse: options.clickhouse === false ? undefined : clickhouse,
    solana: localnet
      ? { url: localnet.rpcUrl, wsUrl: localnet.wsUrl, source: 'embedded' }
      : { url: 'http://127.0.0.1:9/no-chain-in-this-test', wsUrl: 'ws://127.0.0.1:10', source: 'external' },
  };
  const app = openApp(config, pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }), stack);
  await app.migrate();

  return {
    app,
    config,
    id,
    localnet,
    close: async () => {
      await localnet?.close();
      if (app.clickhouse.configured)
        await app.clickhouse.client.command({ query: `DROP DATABASE IF EXISTS \`${id}\`` });
      const keys = await app.redis.keys(`${id}:*`);
      if (keys.length > 0) await app.redis.del(...keys);
      await app.close();
      await withAdmin(serverUrl, (admin) =>
        admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(id)} WITH (FORCE)`),
      );
    },
  };
}

async function withAdmin<T>(serverUrl: string, run: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: databaseUrl(serverUrl, 'postgres') });
  await admin.connect();
  try {
    return await run(admin);
  } finally {
    await admin.end();
  }
}
