import type { App } from '../src/app/app.js';
import { startLoop, type BackgroundLoop } from '../src/app/background-loop.js';
import { shipBatch, shipperLag } from '../src/app/indexer/event-shipper.js';

/**
 * The event shipper of the worker role: drains the Postgres outbox of domain events and ledger
 * legs into ClickHouse, a batch at a time, and keeps the shipper-lag gauge current. While
 * ClickHouse is down the batches fail, the rows wait in Postgres, and the loop backs off.
 */
export function startEventShipper(app: App): BackgroundLoop {
  return startLoop({
    name: 'event shipper',
    log: app.logger.child({ role: 'worker', loop: 'event-shipper' }),
    idleMs: 500,
    step: async () => {
      try {
        const shipped = await shipBatch(app);
        app.metrics.shippedRows.inc({ stream: 'events' }, shipped.events);
        app.metrics.shippedRows.inc({ stream: 'legs' }, shipped.legs);
        // Anything shipped: look again at once (a round stops at its batch budget).
        return shipped.events + shipped.legs > 0;
      } catch (error) {
        app.metrics.shipperFailures.inc();
        throw error;
      } finally {
        const lag = await shipperLag(app.db).catch(() => undefined);
        if (lag) {
          app.metrics.shipperLagSeconds.set({ stream: 'events' }, lag.events);
          app.metrics.shipperLagSeconds.set({ stream: 'legs' }, lag.legs);
        }
      }
    },
  });
}
