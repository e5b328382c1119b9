import { parseArgs } from 'node:util';
import { ConfigError, readConfig } from './config/index.js';
import { createLogger } from './logger.js';
import { runService, type RunningService } from './service.js';
import { startupSummary } from './startup-summary.js';
import { handleShutdownSignals } from './shutdown/shutdown-signals.js';
import { describeRunning, stopWithin, type RunStep } from './shutdown/shutdown-steps.js';
import { exitAtOnce } from './shutdown/exit-at-once.js';
import { foregroundTerminal } from './shutdown/terminal.js';
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

  // Signals are handled from the start: a Ctrl-C while the stack comes up stops it once it is up
  // (the embedded servers run in process groups of their own, so the keypress does not reach them).
  const starting = runService(config, logger, roles);
  const up: { service?: RunningService } = {};
  let stopping = false;
  const signals = handleShutdownSignals({
    log: logger,
    timeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    openTerminal: () => foregroundTerminal(),
    stop: () => {
      stopping = true;
      const stop = async (run: RunStep) => (await run('start-up', () => starting)).stop(run);
      void stopWithin(stop, config.SHUTDOWN_TIMEOUT_MS).then((outcome) => {
        switch (outcome.kind) {
          case 'stopped':
            logger.info(`stopped in ${(outcome.elapsedMs / 1000).toFixed(1)} s`);
            process.exit(0);
            break;
          case 'failed':
            logger.error({ err: outcome.error }, 'shutdown failed');
            process.exit(1);
            break;
          case 'timed out':
            logger.error(
              `shutdown did not finish within SHUTDOWN_TIMEOUT_MS=${config.SHUTDOWN_TIMEOUT_MS} ms; ` +
                `still running: ${describeRunning(outcome.running)}; exiting 1 (the embedded servers ` +
                'were told to shut down on their own)',
            );
            up.service?.abandon();
            process.exit(1);
        }
      });
    },
    force: () => {
      up.service?.abandon();
      exitAtOnce(logger);
    },
  });
  // Both stay registered until the process exits: a signal without a listener would kill it.
  process.on('SIGINT', signals.onSignal);
  process.on('SIGTERM', signals.onSignal);

  up.service = await starting;
  if (!stopping) console.log(startupSummary(up.service));
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
