import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createDb, migratePostgres } from '../../src/adapters/postgres/index.js';
import { loadConfig } from '../../src/config/index.js';
import { ensureDatabase, startDevstack } from '../../src/devstack/index.js';
import { databaseUrl } from './urls.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Server URL whose database part is replaced per test file. */
    postgresUrl: string;
    /** A migrated database every test file copies (CREATE DATABASE ... TEMPLATE). */
    postgresTemplate: string;
    redisUrl: string;
    /** Empty when tests use chdb; a ClickHouse server URL when CLICKHOUSE_URL is set. */
    clickhouseUrl: string;
    /** Scratch folder of this run (chdb folders, embedded service data); removed at the end. */
    dataRoot: string;
  }
}

/**
 * Brings up the same embedded defaults as `npm start`, once for the whole run: Postgres from
 * DATABASE_URL or embedded, Redis from REDIS_URL or local, and migrates a template database.
 */
export default async function setup(project: TestProject) {
  const dataRoot = mkdtempSync(path.join(os.tmpdir(), 'ledgerfeed-test-'));
  chmodSync(dataRoot, 0o755); // the embedded Postgres runs as the OS user `postgres`
  const config = loadConfig({ ...process.env, NODE_ENV: 'test', DATA_DIR: dataRoot });
  // Test files that need a chain start their own in-memory localnet; this one only keeps the
  // shared stack complete, on free ports so it never collides with a running `npm start`.
  const stack = await startDevstack(config, { persistent: false, database: 'postgres', localnetPort: 0 });

  const template = `lf_template_${process.pid}_${Date.now().toString(36)}`;
  try {
    await ensureDatabase(databaseUrl(stack.postgres.url, 'postgres'), template);
    const db = createDb(databaseUrl(stack.postgres.url, template), { max: 1 });
    await migratePostgres(db).finally(() => db.destroy());
  } catch (error) {
    await stack.stop(); // never leave an embedded Postgres behind a failed setup
    throw error;
  }

  project.provide('postgresUrl', stack.postgres.url);
  project.provide('postgresTemplate', template);
  project.provide('redisUrl', stack.redis.url);
  project.provide('clickhouseUrl', config.CLICKHOUSE_URL ?? '');
  project.provide('dataRoot', dataRoot);

  return async () => {
    const admin = new pg.Client({ connectionString: databaseUrl(stack.postgres.url, 'postgres') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(template)} WITH (FORCE)`);
    await admin.end();
    await stack.stop();
    rmSync(dataRoot, { recursive: true, force: true });
  };
}
