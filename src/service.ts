import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildHealthServer } from './api/health-server.js';
import { buildServer } from './api/server.js';
import type { PlatformChain } from './adapters/solana/index.js';
import { openApp, type App } from './app/wiring.js';
import type { Config } from './config/index.js';
import { startDevstack } from './devstack/index.js';
import { reportDraining } from './domain/health/health.service.js';
import { untracked, type RunStep } from './shutdown/shutdown-steps.js';
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
  /** Base URL of /healthz and /metrics in a process without the API role. */
  healthUrl: string | undefined;
  /**
   * Stops in the order that loses no work: `/healthz` answers 503 `draining` at once, the API
   * keeps serving SHUTDOWN_DRAIN_MS more, then stops accepting and finishes the requests in flight
   * (a paid write waits for its payment, which the workers still take); then every worker and
   * background loop stops, each finishing the job or round in hand; then the clients close; then
   * the embedded servers this process started. A step that fails is logged and the rest still run;
   * the stop then rejects. `run` names each step (main.ts reports those a deadline cuts short).
   */
  stop(run?: RunStep): Promise<void>;
  /**
   * For a stop cut short (its deadline, a second Ctrl-C) just before the process exits: tells the
   * embedded servers this process started to shut down on their own (they would outlive it, being
   * out of its process group) and removes stack.json. Waits for nothing.
   */
  abandon(): void;
}

/**
 * Brings up the backing services, migrates, and starts the requested roles in this process.
 */
export async function runService(
  config: Config,
  logger: Logger,
  roles: readonly RoleName[],
): Promise<RunningService> {
  // An api alone with no CLICKHOUSE_URL runs without ClickHouse rather than open the embedded
  // chdb folder, which one process holds (the worker and indexer need it: they ship and reconcile).
  const clickhouse = config.CLICKHOUSE_URL !== undefined || roles.some((role) => role !== 'api');
  const stack = await startDevstack(config, { persistent: true, ownProcessGroups: true, clickhouse });
  let app: App | undefined;
  let draining = false;
  let healthServer: FastifyInstance | undefined;
  const running: RunningRole[] = [];
  const stop = async (run: RunStep = untracked) => {
    draining = true;
    const failures: unknown[] = [];
    const attempt = async (what: string, work: () => Promise<void>) => {
      await work().catch((error: unknown) => {
        failures.push(error);
        logger.error({ err: error }, `${what} did not stop cleanly`);
      });
    };
    // The API first: nothing new comes in while the workers still serve what is in flight.
    const api = running.filter((role) => role.name === 'api');
    await Promise.all(api.map((role) => attempt(role.name, () => role.stop(run))));
    await Promise.all(
      running.filter((role) => role.name !== 'api').map((role) => attempt(role.name, () => role.stop(run))),
    );
    // Probed and scraped until the workers are done (it says `draining` from the first signal).
    const health = healthServer;
    if (health) await attempt('health server', () => run('health server', () => health.close()));
    const clients = app;
    if (clients)
      await attempt('clients', () => run('clients (Postgres, Redis, ClickHouse)', () => clients.close()));
    await attempt('embedded servers', () => run('embedded servers', () => stack.stop()));
    if (failures.length > 0)
      throw new AggregateError(failures, `${failures.length} step(s) of the stop failed`);
  };

  try {
    const opened = openApp(config, logger, stack);
    app = opened;
    const migrated = await app.migrate();
    if (migrated.postgres.length + migrated.clickhouse.length > 0)
      logger.info(migrated, 'migrations applied');
    const platform = await app.bootstrapChain();
    // `draining` (503) from the first stop signal: a balancer stops sending, compose sees it.
    const drainingHealth = reportDraining(
      () => opened.checkHealth(),
      () => draining,
    );

    let apiUrl: string | undefined;
    if (roles.includes('api')) {
      const server = await buildServer({ ...opened, checkHealth: drainingHealth });
      // close() closes the connections idle at that moment; one whose request was in flight would
      // stay open after its answer for as long as the client keeps it (Fastify announces 72 s of
      // keep-alive), holding close() that long. Answers sent while closing end their connection.
      let closing = false;
      server.addHook('onSend', async (_request, reply, payload) => {
        if (closing) void reply.header('connection', 'close');
        return payload;
      });
      apiUrl = await listen(server, config.HOST, config.PORT, 'PORT');
      const drainMs = config.SHUTDOWN_DRAIN_MS;
      running.push({
        name: 'api',
        summary: [apiUrl],
        stop: async (run = untracked) => {
          if (drainMs > 0) await run(`api: draining (${drainMs} ms of /healthz 503)`, () => sleep(drainMs));
          // Fastify's close: the listener stops accepting, idle keep-alive connections close, a
          // request arriving on a busy one is answered 503, and those in flight finish.
          closing = true;
          await run('api: HTTP server (requests in flight)', () => server.close());
        },
      });
    }
    let healthUrl: string | undefined;
    if (!roles.includes('api')) {
      healthServer = buildHealthServer({ ...opened, checkHealth: drainingHealth });
      const port = config.HEALTH_PORT ?? config.PORT;
      healthUrl = await listen(
        healthServer,
        config.HOST,
        port,
        config.HEALTH_PORT === undefined ? 'PORT' : 'HEALTH_PORT',
      );
    }
    if (roles.includes('worker')) running.push(await startWorkerRole(app, processorsFor(app)));
    if (roles.includes('indexer')) running.push(startIndexerRole(app));

    stack.publish({ api: apiUrl });
    return { app, platform, roles: running, apiUrl, healthUrl, stop, abandon: () => stack.abandon() };
  } catch (error) {
    await stop().catch(() => {}); // each failed step is logged; the start-up error is the one to show
    throw error;
  }
}

/** Listens, and names the setting to change when the port is taken; resolves to the base URL. */
async function listen(server: FastifyInstance, host: string, port: number, setting: string): Promise<string> {
  await server.listen({ port, host }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'EADDRINUSE') {
      throw new Error(`${setting} ${port} on ${host} is in use: stop what holds it or set ${setting}`, {
        cause: error,
      });
    }
    throw error;
  });
  // Port 0 asks the OS for a free port: the URL names the one it gave.
  const address = server.server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${bound}`;
}
