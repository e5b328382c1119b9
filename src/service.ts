import type { Logger } from 'pino';
import { buildServer } from './api/server.js';
import type { PlatformChain } from './adapters/solana/index.js';
import { openApp, type App } from './app/app.js';
import type { Config } from './config/index.js';
import { startDevstack } from './devstack/index.js';
import { startIndexerRole } from '../workers/indexer.role.js';
import { processorsFor } from '../workers/processors.js';
import type { RoleName, RunningRole } from '../workers/role.js';
import { startWorkerRole } from '../workers/worker.role.js';

export interface RunningService {
  app: App;
  platform: PlatformChain;
  roles: RunningRole[];
  /** Base URL of the API role, when it runs. */
  apiUrl: string | undefined;
  stop(): Promise<void>;
}

/**
 * Brings up the backing services, migrates, and starts the requested roles in this process.
 * Stopping reverses the order: roles finish their work first, then clients close, then the
 * embedded servers this process started shut down.
 */
export async function runService(
  config: Config,
  logger: Logger,
  roles: readonly RoleName[],
): Promise<RunningService> {
  const stack = await startDevstack(config, { persistent: true });
  let app: App | undefined;
  const running: RunningRole[] = [];
  const stop = async () => {
    for (const role of running.reverse()) {
      await role
        .stop()
        .catch((error: unknown) =>
          logger.error({ err: error, role: role.name }, 'role did not stop cleanly'),
        );
    }
    await app?.close();
    await stack.stop();
  };

  try {
    app = openApp(config, logger, stack);
    const migrated = await app.migrate();
    if (migrated.postgres.length + migrated.clickhouse.length > 0)
      logger.info(migrated, 'migrations applied');
    const platform = await app.bootstrapChain();

    let apiUrl: string | undefined;
    if (roles.includes('api')) {
      const server = await buildServer(app);
      await server.listen({ port: config.PORT, host: config.HOST }).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'EADDRINUSE') {
          throw new Error(`PORT ${config.PORT} on ${config.HOST} is in use: stop what holds it or set PORT`, {
            cause: error,
          });
        }
        throw error;
      });
      apiUrl = `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${config.PORT}`;
      running.push({ name: 'api', summary: [apiUrl], stop: () => server.close() });
    }
    if (roles.includes('worker')) running.push(await startWorkerRole(app, processorsFor(app)));
    if (roles.includes('indexer')) running.push(startIndexerRole(app));

    stack.publish({ api: apiUrl });
    return { app, platform, roles: running, apiUrl, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
