import { Migrator, type MigrationResultSet } from 'kysely';
import { postgresMigrations } from '../../../schema/postgres/index.js';
import type { Db } from './db.js';

export interface MigrationReport {
  applied: string[];
}

/**
 * Applies every pending migration in name order. Kysely's Migrator holds a lock for the run, so
 * roles starting at once against one database migrate once.
 */
export async function migratePostgres(db: Db): Promise<MigrationReport> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve(postgresMigrations) },
    migrationTableName: 'kysely_migration',
  });
  const { error, results } = await migrator.migrateToLatest();
  failOnError(error, results);
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
}

function failOnError(error: unknown, results: MigrationResultSet['results']): void {
  if (error === undefined) return;
  const failed = results?.find((r) => r.status === 'Error')?.migrationName;
  const reason = error instanceof Error ? error.message : JSON.stringify(error);
  throw new Error(`Postgres migration ${failed ?? '(setup)'} failed: ${reason}`, { cause: error });
}
