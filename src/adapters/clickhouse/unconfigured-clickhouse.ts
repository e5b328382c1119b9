import type { ClickHouseClient } from '@clickhouse/client';
import { AppError } from '../../domain/errors.js';
import type { ClickHouse } from './clickhouse.js';

/**
 * The ClickHouse of a process that runs without one (an `api` role with no CLICKHOUSE_URL, beside a
 * worker and indexer holding the embedded chdb folder): every use refuses with 503
 * `analytics_unavailable`, naming the setting, so analytics fields fail clearly and nothing else
 * is touched. Closing it is a no-op.
 */
export function unconfiguredClickHouse(database: string): ClickHouse {
  const refusal = () =>
    new AppError(
      'analytics_unavailable',
      'Analytics are not available from this process: it runs without ClickHouse (set CLICKHOUSE_URL to serve them)',
    );
  // Every method refuses; `then` and symbols stay undefined so the client is never taken for a
  // promise (an `await` of it would hang) and logs print it plainly.
  const client = new Proxy({} as ClickHouseClient, {
    get: (_target, property) => {
      if (typeof property === 'symbol' || property === 'then') return undefined;
      return property === 'close' ? () => Promise.resolve() : () => Promise.reject(refusal());
    },
  });
  return {
    client,
    database,
    configured: false,
    table: (name) => `\`${database}\`.\`${name}\``,
    insertRows: () => Promise.reject(refusal()),
    insertTabSeparated: () => Promise.reject(refusal()),
    streamRows: () => refusedStream(refusal),
    streamBytes: () => refusedStream(refusal),
    streamParquetOfRows: () => refusedStream(refusal),
    close: () => Promise.resolve(),
  };
}

/** An iteration that throws `refusal()` at its first step. */
function refusedStream(refusal: () => AppError): AsyncIterable<never> {
  return { [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(refusal()) }) };
}
