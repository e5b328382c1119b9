import type { Db } from '../../adapters/postgres/db.js';
import {
  recordDelivered,
  type DeliveredRecord,
  type EndpointSecrets,
} from '../../adapters/postgres/webhook-deliveries.repository.js';

/** Records one statement writes at most (a statement of a few hundred rows stays a few ms). */
export const MAX_RECORDS_PER_STATEMENT = 500;

/**
 * Delivered events written as group commits: one statement in flight at a time, and whatever
 * arrives meanwhile leaves together when it returns. Alone, a record leaves at once (one round
 * trip, as before); under a backlog of many endpoints, one commit serves dozens of deliveries.
 * Each endpoint waits for its own record before sending its next event, so the order of an
 * endpoint's writes is its delivery order.
 */
export interface DeliveredRecords {
  /** The endpoint's current secrets, or undefined when its guard no longer held (see recordDelivered). */
  write(delivered: DeliveredRecord): Promise<EndpointSecrets | undefined>;
}

interface Waiting {
  delivered: DeliveredRecord;
  resolve: (secrets: EndpointSecrets | undefined) => void;
  reject: (error: unknown) => void;
}

export function deliveredRecords(db: Db): DeliveredRecords {
  let waiting: Waiting[] = [];
  let flushing = false;

  const flush = async () => {
    flushing = true;
    while (waiting.length > 0) {
      const batch = waiting.slice(0, MAX_RECORDS_PER_STATEMENT);
      waiting = waiting.slice(batch.length);
      try {
        const current = await recordDelivered(
          db,
          batch.map((entry) => entry.delivered),
        );
        for (const entry of batch) entry.resolve(current.get(entry.delivered.guard.endpointId));
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    flushing = false;
  };

  return {
    write: (delivered) =>
      new Promise((resolve, reject) => {
        waiting.push({ delivered, resolve, reject });
        // The rest of this turn's records join the first statement.
        if (!flushing) {
          flushing = true;
          setImmediate(() => void flush());
        }
      }),
  };
}
