import path from 'node:path';
import type { ClickHouseTarget } from '../adapters/clickhouse/clickhouse.js';
import type { StackState } from './state-file.js';

export class ClickHouseFolderBusyError extends Error {
  override name = 'ClickHouseFolderBusyError';
}

export function resolveClickHouse(
  clickhouseUrl: string | undefined,
  dataDir: string,
  shared: StackState | undefined,
): ClickHouseTarget {
  if (clickhouseUrl) return { kind: 'http', url: clickhouseUrl };
  const folder = path.join(dataDir, 'clickhouse');
  if (shared?.chdbPath === folder) {
    throw new ClickHouseFolderBusyError(
      `The embedded ClickHouse in ${folder} is held by Ledgerfeed process ${shared.pid}; chdb opens a ` +
        'folder from one process only. Run all roles in that one process (npm start), or point every ' +
        'process at a ClickHouse server with CLICKHOUSE_URL (docker compose up clickhouse).',
    );
  }
  return { kind: 'chdb', path: folder };
}
