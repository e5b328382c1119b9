import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { loadOrCreateDevMasterKey } from '../src/adapters/solana/keystore.js';
import type { App } from '../src/app/wiring.js';
import type { Config } from '../src/config/index.js';
import { spawnModuleThread } from '../src/module-thread.js';
import type { QueueProcessor } from './queue-workers.js';
import type { PublishedPaymentSignal } from '../src/adapters/redis/payments-queue.js';

/** What a queue thread is given: the process's settings and the backing services it resolved. */
export interface QueueThreadData {
  queue: string;
  /** 1-based, to tell the threads of one queue apart in logs and bull-board. */
  index: number;
  config: Config;
  postgresUrl: string;
  redisUrl: string;
  solanaUrl: string;
  /** This process's PaymentsQueue origin: signals for its own requests come back as messages. */
  paymentsOrigin: string;
}

/** What a queue thread tells its parent. */
export type QueueThreadMessage =
  | { type: 'ready' }
  | { type: 'closed' }
  | { type: 'log'; record: Record<string, unknown> }
  /** A payment signal for a request of this process (localPaymentSignals in the thread). */
  | { type: 'payment-signal'; jobId: string; signal: PublishedPaymentSignal };

export interface QueueThread {
  name: string;
  /** Lets the thread finish the jobs in hand and close its clients, then ends it. */
  stop(): Promise<void>;
}

/** A thread that ended without being asked is started again after this pause. */
const RESTART_AFTER_MS = 1_000;

/**
 * Serves `p`'s queue from a worker thread running `p.thread.module` (see payments.thread.ts): its
 * own event loop on another core, so the jobs' CPU (BullMQ's round trips, signing, status polls)
 * does not queue the API's requests behind it. Resolves once the thread's BullMQ Workers listen.
 * The thread logs through this process's logger; one that dies is logged and started again (jobs
 * it held are taken over by BullMQ's stall check, and settling is idempotent).
 */
export async function startQueueThread(
  app: App,
  p: QueueProcessor,
  index: number,
  log: Logger,
): Promise<QueueThread> {
  const module = p.thread;
  if (!module) throw new Error(`queue ${p.queue} has no thread module`);
  const name = `${p.queue} thread ${index}`;
  const threadLog = log.child({ thread: name });
  const data: QueueThreadData = {
    queue: p.queue,
    index,
    // The dev master key's file exists by now (this process opened it): handing its key over spares
    // the thread a second "using DEVELOPMENT wallet master key" warning.
    config: {
      ...app.config,
      WALLET_MASTER_KEY:
        app.config.WALLET_MASTER_KEY ??
        loadOrCreateDevMasterKey(app.config.dataDir, () => {}).toString('hex'),
    },
    postgresUrl: app.stack.postgres.url,
    redisUrl: app.stack.redis.url,
    solanaUrl: app.stack.solana.url,
    paymentsOrigin: app.payments.origin,
  };

  let stopping = false;
  let running: { thread: Worker; exited: Promise<void> } | undefined;
  /** The latest start, so that a stop during a restart waits for it and ends that thread too. */
  let starting: Promise<void> | undefined;
  let restartTimer: NodeJS.Timeout | undefined;

  const spawn = async (): Promise<void> => {
    const thread = spawnModuleThread(module.baseUrl, module.module, data);
    thread.on('message', (message: QueueThreadMessage) => {
      if (message.type === 'log') relay(threadLog, message.record);
      else if (message.type === 'payment-signal') app.payments.deliver(message.jobId, message.signal);
    });
    await new Promise<void>((resolve, reject) => {
      const onMessage = (message: QueueThreadMessage) => {
        if (message.type !== 'ready') return;
        settle();
        resolve();
      };
      const onExit = (code: number) => {
        settle();
        reject(new Error(`${name} exited with code ${code} before it was ready`));
      };
      const settle = () => {
        thread.off('message', onMessage);
        thread.off('error', reject);
        thread.off('exit', onExit);
      };
      thread.on('message', onMessage);
      thread.once('error', reject);
      thread.once('exit', onExit);
    });
    thread.on('error', (error) => threadLog.error({ err: error }, `${name} failed`));
    const exited = new Promise<void>((resolve) =>
      thread.once('exit', (code) => {
        resolve();
        if (stopping) return;
        threadLog.error(`${name} ended unexpectedly (exit code ${code}); starting it again`);
        restartTimer = setTimeout(restart, RESTART_AFTER_MS);
      }),
    );
    running = { thread, exited };
  };
  const restart = () => {
    starting = spawn();
    starting.catch((error: unknown) => {
      threadLog.error({ err: error }, `${name} did not start again; retrying`);
      if (!stopping) restartTimer = setTimeout(restart, RESTART_AFTER_MS);
    });
  };

  starting = spawn();
  await starting;
  return {
    name,
    stop: async () => {
      stopping = true;
      clearTimeout(restartTimer);
      await starting?.catch(() => {});
      if (!running) return;
      const { thread, exited } = running;
      const closed = new Promise<void>((resolve) =>
        thread.on('message', (message: QueueThreadMessage) => {
          if (message.type === 'closed') resolve();
        }),
      );
      thread.postMessage({ type: 'close' });
      await Promise.race([closed, exited]);
      await thread.terminate();
    },
  };
}

/** A pino record of the thread, logged again here at its level (pino's own fields dropped). */
function relay(log: Logger, record: Record<string, unknown>): void {
  const { level, msg, time: _time, pid: _pid, hostname: _hostname, ...fields } = record;
  const label = log.levels.labels[Number(level)] ?? 'info';
  const method = log[label as 'info'].bind(log);
  method(fields, typeof msg === 'string' ? msg : '');
}
