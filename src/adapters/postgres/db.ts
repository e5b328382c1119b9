import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './database.js';
import { preparingPool } from './prepared-statements.js';

const INT8_OID = 20;

/**
 * How long a connection may sit idle before the pool closes it. pg's default (10 s) closed the
 * connections a burst had warmed as soon as the load dropped, and the next burst paid again for
 * cold backends (likely their first plans of our prepared statements and first PL/pgSQL compiles:
 * connections opened in advance but unused were as slow). Stepping from 20 + 100 to 100 + 300
 * writes/s after 30 s at the lower rate, posts answered at p99 5.5 s in the first 9 s with the
 * default, 0.24-0.39 s with connections kept (`npm run bench:write-step`, docs/benchmarks.md).
 * `max` still bounds what a process holds.
 */
const IDLE_CONNECTION_MS = 5 * 60_000;

/**
 * Money is bigint micro-USD end to end: int8 columns come back as `bigint`, never as a lossy
 * number or a string. Set per pool so nothing global changes for other pg users in the process.
 */
const parseInt8 = (value: string): bigint => BigInt(value);
const types = {
  getTypeParser: ((oid: number, format: 'text' | 'binary' = 'text'): unknown =>
    oid === INT8_OID && format === 'text'
      ? parseInt8
      : (pg.types.getTypeParser as (oid: number, format: string) => unknown)(
          oid,
          format,
        )) as typeof pg.types.getTypeParser,
};

export interface DbOptions {
  /** Pool size; Postgres connections are cheap here, but each role needs only a few. */
  max?: number;
  applicationName?: string;
}

export type Db = Kysely<Database>;

export function createPool(url: string, options: DbOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'ledgerfeed',
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: IDLE_CONNECTION_MS,
    types,
  });
  // An idle client losing its server (Postgres restarted) emits here; without a listener that
  // error would crash the process. The next query reconnects.
  pool.on('error', () => {});
  // A client checked out but between queries (a transaction waiting on ClickHouse or on the
  // chain) emits 'error' itself when its server dies; unheard, that event would crash the
  // process. The holder sees the failure on its next query, and the pool drops the broken client.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

export function createDb(url: string, options: DbOptions = {}): Db {
  return new Kysely<Database>({
    dialect: new PostgresDialect({ pool: preparingPool(createPool(url, options)) }),
  });
}
