import { createRedis } from '../adapters/redis/index.js';
import { createLiveEvents, type LiveEvents } from '../adapters/redis/live-events.js';
import { publishChange, type ChangeKey, type ChangeSignals } from '../app/change-signals.js';

export type CliChangeSignals = Pick<ChangeSignals, 'changed'> & { close(): Promise<void> };

/**
 * A CLI command's side of the change signals: it holds no read cache of its own, but what it
 * changes (a revoked key, a failed payment) must reach the caches of running API processes. Redis
 * is opened on the first change only; close() waits for every publish.
 */
export function cliChangeSignals(redisUrl: string, prefix: string): CliChangeSignals {
  let open: { redis: ReturnType<typeof createRedis>; liveEvents: LiveEvents } | undefined;
  const publishes: Array<Promise<void>> = [];
  return {
    changed: (...keys: ChangeKey[]) => {
      if (!open) {
        const redis = createRedis(redisUrl, 'client');
        open = { redis, liveEvents: createLiveEvents({ url: redisUrl, prefix, publisher: redis }) };
      }
      publishes.push(publishChange(open.liveEvents, keys).catch(() => undefined));
    },
    close: async () => {
      await Promise.all(publishes);
      if (open) {
        await open.liveEvents.close();
        await open.redis.quit();
      }
    },
  };
}
