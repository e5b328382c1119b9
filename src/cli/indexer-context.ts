import type { Logger } from 'pino';
import { createClickHouse, migrateClickHouse, type ClickHouse } from '../adapters/clickhouse/index.js';
import { createDb, migratePostgres, type Db } from '../adapters/postgres/index.js';
import { createMetrics, type Metrics } from '../observability/metrics.js';
import type { ChangeSignals } from '../app/change-signals.js';
import { createCoreServices, type CoreServices } from '../app/wiring-core.js';
import { readConfig, type Config } from '../config/index.js';
import { ClickHouseFolderBusyError } from '../devstack/clickhouse.devstack.js';
import { startDevstack } from '../devstack/index.js';
import { createLogger } from '../logger.js';
import { cliChangeSignals } from './cli-changes.js';

/** What `reconcile`, `reindex` and `report` need: the CLI context plus ClickHouse and metrics. */
export interface IndexerCliContext extends CoreServices {
  config: Config;
  logger: Logger;
  db: Db;
  clickhouse: ClickHouse;
  /** The reconciler counts into these; a CLI run has no /metrics to show them, so they are dropped. */
  metrics: Metrics;
  /** Tells running API processes' read caches what this command changed. */
  changes: Pick<ChangeSignals, 'changed'>;
}

/** Why an indexer command cannot run beside `npm start` on the embedded ClickHouse, and what to do. */
export class ClickHouseBusyRefused extends Error {
  override name = 'ClickHouseBusyRefused';
}

const BUSY_HINT =
  'The indexer commands (reconcile, reindex, report) write to or read ClickHouse. The embedded ' +
  'ClickHouse (chdb) opens its data folder from one process only, and a running `npm start` with ' +
  'the same DATA_DIR holds it. Stop `npm start` and run the command again, or run every process ' +
  'against a ClickHouse server (CLICKHOUSE_URL=..., e.g. docker compose up clickhouse).';

/**
 * Like withCliContext, but with ClickHouse open (and migrated: a fresh DATA_DIR works too). It
 * shares a running `npm start`'s Postgres and chain through stack.json; it cannot share chdb.
 */
export async function withIndexerContext<T>(run: (context: IndexerCliContext) => Promise<T>): Promise<T> {
  const config = readConfig();
  const logger = createLogger(config);
  const stack = await startDevstack(config, { persistent: true }).catch((error: unknown) => {
    if (error instanceof ClickHouseFolderBusyError) {
      throw new ClickHouseBusyRefused(`${error.message}\n\n${BUSY_HINT}`, { cause: error });
    }
    throw error;
  });
  const db = createDb(stack.postgres.url, { max: 4 });
  const clickhouse = createClickHouse(stack.clickhouse!, config.CLICKHOUSE_DATABASE);
  const changes = cliChangeSignals(stack.redis.url, config.REDIS_PREFIX);
  try {
    await migratePostgres(db);
    await migrateClickHouse(clickhouse).catch((error: unknown) => {
      // A process that holds the folder without stack.json (an older build, another tool) shows up
      // only here, as chdb's own error: add what it means for this command.
      if (stack.clickhouse?.kind === 'chdb') {
        throw new ClickHouseBusyRefused(
          `Cannot open the embedded ClickHouse in ${stack.clickhouse.path}: ${(error as Error).message}\n\n${BUSY_HINT}`,
          { cause: error },
        );
      }
      throw error;
    });
    return await run({
      config,
      logger,
      db,
      clickhouse,
      metrics: createMetrics(),
      changes,
      ...createCoreServices(config, logger, db, stack.solana.url),
    });
  } finally {
    await changes.close();
    await db.destroy();
    await clickhouse.close();
    await stack.stop();
  }
}
