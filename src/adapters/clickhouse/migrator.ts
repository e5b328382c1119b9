import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../project-root.js';
import type { ClickHouse } from './clickhouse.js';

const DDL_FOLDER = path.join(projectRoot(), 'schema', 'clickhouse');

export interface ClickHouseMigration {
  name: string;
  statements: string[];
}

/**
 * The DDL files of schema/clickhouse in name order, each split into statements. `{db}` in a file
 * stands for the target database, so one file serves every deployment and every test database.
 */
export function loadClickHouseMigrations(folder = DDL_FOLDER): ClickHouseMigration[] {
  return readdirSync(folder)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => ({
      name: file.replace(/\.sql$/, ''),
      statements: splitStatements(readFileSync(path.join(folder, file), 'utf8')),
    }));
}

/** Splits on `;` at line ends; comment lines are dropped first so a `;` in a comment is harmless. */
export function splitStatements(sqlText: string): string[] {
  return sqlText
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n')
    .split(/;\s*(?:\n|$)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement.length > 0);
}

/**
 * Creates the database and applies pending DDL files, recording each in `schema_migrations`.
 * Every statement is written IF NOT EXISTS, so a run interrupted between a statement and its
 * record (or two processes racing) re-applies harmlessly.
 */
export async function migrateClickHouse(
  ch: ClickHouse,
  migrations = loadClickHouseMigrations(),
): Promise<{ applied: string[] }> {
  await ch.client.command({ query: `CREATE DATABASE IF NOT EXISTS \`${ch.database}\`` });
  await ch.client.command({
    query: `CREATE TABLE IF NOT EXISTS ${ch.table('schema_migrations')} (
      name String,
      applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
    ) ENGINE = ReplacingMergeTree ORDER BY name`,
  });
  const done = await ch.client.query({
    query: `SELECT DISTINCT name FROM ${ch.table('schema_migrations')}`,
    format: 'JSONEachRow',
  });
  const appliedBefore = new Set((await done.json<{ name: string }>()).map((row) => row.name));

  const applied: string[] = [];
  for (const migration of migrations) {
    if (appliedBefore.has(migration.name)) continue;
    for (const statement of migration.statements) {
      await ch.client.command({ query: statement.replaceAll('{db}', `\`${ch.database}\``) });
    }
    await ch.client.insert({
      table: ch.table('schema_migrations'),
      values: [{ name: migration.name }],
      format: 'JSONEachRow',
    });
    applied.push(migration.name);
  }
  return { applied };
}
