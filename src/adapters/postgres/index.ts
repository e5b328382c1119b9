export { createDb, createPool, type Db, type DbOptions } from './db.js';
export { migratePostgres, type MigrationReport } from './migrator.js';
export type { Database } from './database.js';
