import type { App } from '../src/app/wiring.js';
import { startLoop, type BackgroundLoop } from '../src/app/background-loop.js';
import { notifyCommitted } from '../src/app/commit-notifier.js';
import { buildTrendingSnapshot } from '../src/app/feed/trending.js';

/** How often the trending ranking is rebuilt (a new versioned snapshot each time). */
export const TRENDING_REBUILD_MS = 5_000;

/** The worker role's trending builder: a fresh ranked snapshot every few seconds. */
export function startTrendingBuilder(app: App): BackgroundLoop {
  return startLoop({
    name: 'trending snapshot',
    log: app.logger.child({ role: 'worker', loop: 'trending' }),
    idleMs: TRENDING_REBUILD_MS,
    step: async () => {
      await buildTrendingSnapshot({
        db: app.db,
        redis: app.redis,
        redisPrefix: app.config.REDIS_PREFIX,
        cursorSecret: app.cursorSecret,
      });
      notifyCommitted(app, { kind: 'trending-rebuilt' });
      return false;
    },
  });
}
