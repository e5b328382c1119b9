import type { Logger } from 'pino';
import { createDb, migratePostgres, type Db } from '../adapters/postgres/index.js';
import type { ChangeSignals } from '../app/change-signals.js';
import { createCoreServices, type CoreServices } from '../app/wiring-core.js';
import { readConfig, type Config } from '../config/index.js';
import { startDevstack } from '../devstack/index.js';
import { createLogger } from '../logger.js';
import { cliChangeSignals } from './cli-changes.js';

export interface CliContext extends CoreServices {
  config: Config;
  logger: Logger;
  db: Db;
  /** Tells running API processes' read caches what this command changed. */
  changes: Pick<ChangeSignals, 'changed'>;
}

/**
 * Runs one command against the deployment's Postgres and chain: those of a running `npm start`
 * (found through DATA_DIR/stack.json), the configured ones, or embedded ones started for the
 * command. ClickHouse stays closed: a running `npm start` holds the chdb folder.
 */
export async function withCliContext<T>(run: (context: CliContext) => Promise<T>): Promise<T> {
  const config = readConfig();
  const logger = createLogger(config);
  const stack = await startDevstack(config, { persistent: true, clickhouse: false });
  const db = createDb(stack.postgres.url, { max: 2 });
  const changes = cliChangeSignals(stack.redis.url, config.REDIS_PREFIX);
  try {
    await migratePostgres(db);
    return await run({
      config,
      logger,
      db,
      changes,
      ...createCoreServices(config, logger, db, stack.solana.url),
    });
  } finally {
    await changes.close();
    await db.destroy();
    await stack.stop();
  }
}
