import { Readable } from 'node:stream';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { createChdbConnection } from 'chdb/connection';

/** Where ClickHouse lives: a server over HTTP, or chdb inside this process on a folder. */
export type ClickHouseTarget =
  { readonly kind: 'http'; readonly url: string } | { readonly kind: 'chdb'; readonly path: string };

/**
 * A ClickHouse client bound to one database. chdb's connection ignores the client's `database`
 * option, so every statement names its tables through `table()`; the same SQL then runs on chdb
 * and on a ClickHouse server.
 */
export interface ClickHouse {
  readonly client: ClickHouseClient;
  readonly database: string;
  /** False for the stand-in of a process without ClickHouse (unconfigured-clickhouse.ts). */
  readonly configured: boolean;
  /** Backquoted `database`.`name`. */
  table(name: string): string;
  /** Inserts rows (JSONEachRow: 64-bit integers as strings) into a table of this database. */
  insertRows(table: string, rows: ReadonlyArray<Record<string, unknown>>): Promise<void>;
  /**
   * Inserts rows already encoded as TabSeparated text (one line each, `\N` for NULL, backslash
   * escapes): bulk copies whose text another system wrote, with no JavaScript object per row.
   */
  insertTabSeparated(table: string, columns: readonly string[], body: string): Promise<void>;
  close(): Promise<void>;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function createClickHouse(target: ClickHouseTarget, database: string): ClickHouse {
  if (!IDENTIFIER.test(database)) throw new Error(`invalid ClickHouse database name: ${database}`);
  const settings = {
    // 64-bit integers (micro-USD amounts) as JSON strings, never as lossy doubles. A server
    // defaults to this; chdb does not.
    output_format_json_quote_64bit_integers: 1,
  } as const;
  const client =
    target.kind === 'http'
      ? createClient({ url: target.url, clickhouse_settings: settings, request_timeout: 30_000 })
      : createClient({ connection: chdbConnection(target.path), clickhouse_settings: settings });
  const table = (name: string) => {
    if (!IDENTIFIER.test(name)) throw new Error(`invalid ClickHouse table name: ${name}`);
    return `\`${database}\`.\`${name}\``;
  };
  return {
    client,
    database,
    configured: true,
    table,
    insertRows: async (name, rows) => {
      if (rows.length === 0) return;
      await client.insert({ table: table(name), format: 'JSONEachRow', values: [...rows] });
    },
    insertTabSeparated: async (name, columns, body) => {
      if (body.length === 0) return;
      await client.insert({
        table: table(name),
        format: 'TabSeparated',
        values: Readable.from([Buffer.from(body)], { objectMode: false }),
        columns: [...columns] as [string, ...string[]],
      });
    },
    close: () => client.close(),
  };
}

type ClientConnection = NonNullable<Parameters<typeof createClient>[0]>['connection'];

/**
 * chdb implements the Connection interface of @clickhouse/client-common, which @clickhouse/client
 * also bundles as its own copy: structurally the same, nominally two types.
 */
function chdbConnection(path: string): ClientConnection {
  return createChdbConnection({ path }) as unknown as ClientConnection;
}
