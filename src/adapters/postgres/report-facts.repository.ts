import { sql } from 'kysely';
import type { Db } from './db.js';

/**
 * Accounts after `afterId` (id order), up to `limit`, as TabSeparated lines for ClickHouse
 * `report_accounts` (account_id, handle, wallet_address), written by Postgres: no JavaScript object
 * per account.
 */
export async function reportAccountsPage(
  db: Db,
  afterId: string,
  limit: number,
): Promise<{ body: string; count: number; lastId: string | null }> {
  const { rows } = await sql<{ n: string; body: string | null; last_id: string | null }>`
    WITH page AS MATERIALIZED (
      SELECT id, handle, coalesce(wallet_address, '') AS wallet_address
        FROM accounts WHERE id > ${afterId}::uuid ORDER BY id LIMIT ${limit})
    SELECT count(*)::text AS n,
           string_agg(concat_ws(E'\\t', id::text,
                                replace(replace(replace(handle, '\\', '\\\\'), E'\\t', '\\t'), E'\\n', '\\n'),
                                wallet_address), E'\\n') || E'\\n' AS body,
           (SELECT id::text FROM page ORDER BY id DESC LIMIT 1) AS last_id
      FROM page`.execute(db);
  const row = rows[0];
  const count = Number(row?.n ?? 0);
  return { body: count > 0 ? (row?.body ?? '') : '', count, lastId: row?.last_id ?? null };
}
