import { sql } from 'kysely';
import type { Db } from './db.js';

/** The health probe's round trip: resolves once Postgres answers a query, rejects otherwise. */
export async function pingPostgres(db: Db): Promise<unknown> {
  return sql`SELECT 1`.execute(db);
}
