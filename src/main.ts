import { parseArgs } from 'node:util';
import { ConfigError, readConfig } from './config/index.js';
import { createLogger } from './logger.js';
import { runService } from './service.js';
import { startupSummary } from './startup-summary.js';
import { ROLE_NAMES, type RoleName } from '../workers/role.js';

/** `npm start [-- --only api|worker|indexer[,...]]`: every role in one process by default. */
function parseRoles(argv: string[]): RoleName[] {
  const { values } = parseArgs({ args: argv, options: { only: { type: 'string', multiple: true } } });
  if (!values.only) return [...ROLE_NAMES];
  const requested = values.only.flatMap((v) => v.split(',')).map((v) => v.trim());
  const unknown = requested.filter((r) => !ROLE_NAMES.includes(r as RoleName));
  if (unknown.length > 0)
    throw new ConfigError(`--only: unknown role ${unknown.join(', ')} (expected ${ROLE_NAMES.join(', ')})`);
  return requested as RoleName[];
}

async function main(): Promise<void> {
  let config;
  let roles;
  try {
    config = readConfig();
    roles = parseRoles(process.argv.slice(2));
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  }
  const logger = createLogger(config);

  const service = await runService(config, logger, roles);
  console.log(startupSummary(service));

  let stoppingSince: number | undefined;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stoppingSince !== undefined) {
      // Ctrl-C reaches every process of the terminal's group, and `npm start`/tsx relay it as
      // well: the same keypress can arrive twice. Only a press a second later means "force".
      if (Date.now() - stoppingSince < 1_000) return;
      logger.warn(`${signal} again: exiting without waiting`);
      process.exit(1);
    }
    stoppingSince = Date.now();
    logger.info(`${signal}: stopping (a second Ctrl-C forces exit)`);
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

process.on('unhandledRejection', (reason) => {
  console.error('unhandled rejection:', reason);
});

main().catch((error: unknown) => {
  // Start-up failures are written for a person (which port, which variable); the stack is noise
  // there, but kept for errors without a message of their own.
  const message = error instanceof Error ? error.message : String(error);
  console.error(`Ledgerfeed did not start: ${message || (error as Error).stack}`);
  process.exit(1);
});
