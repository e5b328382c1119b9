export { createClickHouse, type ClickHouse, type ClickHouseTarget } from './clickhouse.js';
export { migrateClickHouse, loadClickHouseMigrations, splitStatements } from './migrator.js';
