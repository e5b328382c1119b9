import type { Logger } from 'pino';
import { createDb, type Db } from '../src/adapters/postgres/index.js';
import { createCoreServices, type CoreServices } from '../src/app/wiring-core.js';
import { loadConfig, type Config } from '../src/config/index.js';
import { createLogger } from '../src/logger.js';

/** Where a bench child finds the service the bench started (its DATA_DIR holds the dev master key). */
export interface ChildStack {
  postgresUrl: string;
  solanaUrl: string;
  dataDir: string;
}

export interface ChildCore {
  config: Config;
  logger: Logger;
  db: Db;
  core: CoreServices;
  close(): Promise<void>;
}

/**
 * The stores and chain clients of a bench child beside the running service (as `npm run chaos`
 * opens them beside its service): its own Postgres pool of `poolSize`, the same localnet, and the
 * platform's signers through the dev master key in the service's DATA_DIR (whose warning, a warn,
 * `logLevel` 'error' leaves out).
 */
export function openChildCore(
  stack: ChildStack,
  poolSize: number,
  logLevel: 'warn' | 'error' = 'warn',
): ChildCore {
  const config = loadConfig({ DATA_DIR: stack.dataDir, LOG_LEVEL: logLevel });
  const logger = createLogger(config);
  const db = createDb(stack.postgresUrl, { max: poolSize });
  const core = createCoreServices(config, logger, db, stack.solanaUrl);
  return {
    config,
    logger,
    db,
    core,
    close: async () => {
      core.watcher.close();
      await core.apiKeyUses.close();
      await db.destroy();
    },
  };
}

/**
 * Serves the parent's messages with `handle` (a failure is printed and exits 1: the failure the
 * parent sees, its ask rejects) and, when the parent goes away, runs `close` and exits.
 */
export function serveParent<M>(handle: (message: M) => Promise<void>, close: () => Promise<unknown>): void {
  process.on('message', (message: M) => {
    handle(message).catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
  });
  process.on('disconnect', () => {
    void close().finally(() => process.exit(0));
  });
}
