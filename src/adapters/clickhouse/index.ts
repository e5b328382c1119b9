export {
  createClickHouse,
  STREAM_SETTINGS,
  type ClickHouse,
  type ClickHouseTarget,
  type RowsParquetQuery,
  type StreamFormat,
  type StreamQuery,
} from './clickhouse.js';
export { unconfiguredClickHouse } from './unconfigured-clickhouse.js';
export { migrateClickHouse, loadClickHouseMigrations, splitStatements } from './migrator.js';
