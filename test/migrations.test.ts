import { readdirSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { migrateClickHouse } from '../src/adapters/clickhouse/index.js';
import { migratePostgres } from '../src/adapters/postgres/index.js';
import { postgresMigrations } from '../schema/postgres/index.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  await env?.close();
});

describe('Postgres migrations', () => {
  test('create the accounts table, and a second run applies nothing', async () => {
    const tables = await sql<{ table_name: string }>`
      SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`.execute(env.app.db);
    expect(tables.rows.map((r) => r.table_name)).toContain('accounts');
    expect((await migratePostgres(env.app.db)).applied).toEqual([]);
  });

  test('every file in schema/postgres is listed in its index', () => {
    const files = readdirSync(new URL('../schema/postgres', import.meta.url))
      .filter((f) => /^\d{4}_\d{2}_\d{2}_[0-9a-z]+_.*\.ts$/.test(f))
      .map((f) => f.replace(/\.ts$/, ''));
    expect(Object.keys(postgresMigrations).sort()).toEqual(files.sort());
  });

  test('the database refuses a handle the spec forbids', async () => {
    const insert = (handle: string) =>
      env.app.db
        .insertInto('accounts')
        .values({ handle, display_name: 'x' })
        .returning('id')
        .executeTakeFirstOrThrow();
    await expect(insert('Not_Valid')).rejects.toThrow(/check constraint/);
    await expect(insert('ab')).rejects.toThrow(/check constraint/);
    await expect(insert('good_handle_1')).resolves.toHaveProperty('id');
    await expect(insert('good_handle_1')).rejects.toThrow(/duplicate key/);
  });
});

describe('ClickHouse migrations', () => {
  test('create the tables in the file database and record each migration once', async () => {
    const { clickhouse } = env.app;
    const tables = await clickhouse.client.query({
      query: 'SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name',
      query_params: { db: clickhouse.database },
      format: 'JSONEachRow',
    });
    expect((await tables.json<{ name: string }>()).map((t) => t.name)).toEqual([
      'chain_transactions',
      'creator_earnings',
      'creator_earnings_mv',
      'creator_posts',
      'creator_posts_mv',
      'domain_events',
      'ledger_legs',
      'post_engagement',
      'post_engagement_mv',
      'reconciliation',
      'report_accounts',
      'schema_migrations',
      'token_movements',
    ]);
    expect((await migrateClickHouse(clickhouse)).applied).toEqual([]);
  });

  test('keeps 64-bit amounts exact through JSON', async () => {
    const { clickhouse } = env.app;
    await clickhouse.client.insert({
      table: clickhouse.table('domain_events'),
      values: [
        {
          event_id: '00000000-0000-4000-8000-000000000001',
          type: 'test',
          occurred_at: '2026-11-22 00:00:00.000',
          amount_micro: '9007199254740993',
        },
      ],
      format: 'JSONEachRow',
    });
    const result = await clickhouse.client.query({
      query: `SELECT amount_micro FROM ${clickhouse.table('domain_events')} WHERE type = 'test'`,
      format: 'JSONEachRow',
    });
    expect(await result.json()).toEqual([{ amount_micro: '9007199254740993' }]);
  });
});
