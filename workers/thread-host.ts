import { parentPort } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Config } from '../src/config/index.js';
import { createLogger } from '../src/logger.js';
import type { QueueThreadMessage } from './queue-thread.js';

/** The thread's logger: each record goes to the parent, which logs it with its own (queue-thread.ts). */
export function parentLogger(config: Config): Logger {
  return createLogger(config, {
    write: (line: string) => {
      const message: QueueThreadMessage = {
        type: 'log',
        record: JSON.parse(line) as Record<string, unknown>,
      };
      parentPort?.postMessage(message);
    },
  });
}

/**
 * Tells the parent the thread serves, then waits for its 'close': runs `close` (finish the jobs in
 * hand, close the clients) and says 'closed'. A failed close is logged; 'closed' is said anyway, as
 * the parent ends the thread next.
 */
export function serveUntilClosed(log: Logger, close: () => Promise<void>): void {
  const say = (message: QueueThreadMessage) => parentPort?.postMessage(message);
  parentPort?.on('message', (message: { type?: string }) => {
    if (message.type !== 'close') return;
    close()
      .catch((error: unknown) => log.error({ err: error }, 'thread did not close cleanly'))
      .finally(() => say({ type: 'closed' }));
  });
  say({ type: 'ready' });
}
