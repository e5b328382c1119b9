import type { App } from '../src/app/wiring.js';
import { startLoop, type BackgroundLoop } from '../src/app/background-loop.js';
import {
  SHIP_BATCH_ROWS,
  SHIP_BATCHES_PER_ROUND,
  shipBatch,
  shipperLag,
} from '../src/app/indexer/event-shipper.js';

/** Rows a round ships at most per stream: a round that shipped this many may have left more. */
const ROUND_BUDGET = SHIP_BATCH_ROWS * SHIP_BATCHES_PER_ROUND;

/**
 * The event shipper of the worker role: drains the Postgres outbox of domain events and ledger
 * legs into ClickHouse, a batch at a time, and keeps the shipper-lag gauge current. While
 * ClickHouse is down the batches fail, the rows wait in Postgres, and the loop backs off.
 */
export function startEventShipper(app: App): BackgroundLoop {
  return startLoop({
    name: 'event shipper',
    log: app.logger.child({ role: 'worker', loop: 'event-shipper' }),
    // A second between rounds: each round is a chdb insert per stream (a part each, merged later),
    // a cost paid per round, not per row. The dashboards read analytics up to a second later.
    idleMs: 1_000,
    step: async () => {
      try {
        const shipped = await shipBatch(app);
        app.metrics.shippedRows.inc({ stream: 'events' }, shipped.events);
        app.metrics.shippedRows.inc({ stream: 'legs' }, shipped.legs);
        // Only a round cut short by its budget looks again at once. Under a steady write load a
        // round that looked again as soon as it shipped anything would ship a few rows every few
        // milliseconds: each chdb insert makes a part, and merging those parts cost up to a core
        // (measured during the write-path bench). Waiting idleMs ships them as one insert.
        return shipped.events >= ROUND_BUDGET || shipped.legs >= ROUND_BUDGET;
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
