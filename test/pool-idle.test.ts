import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createPool } from '../src/adapters/postgres/db.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

/*
 * Connections a burst opened (and warmed: plans, PL/pgSQL functions) stay open through a quiet
 * spell longer than pg's default idle timeout (10 s); with it, the next burst met cold backends
 * (issue 21: `npm run bench:write-step`).
 */
let env: TestEnv;
let pool: pg.Pool;
let observer: pg.Pool;
const name = `lf_idle_${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  env = await openTestEnv();
  pool = createPool(env.config.DATABASE_URL!, { max: 4, applicationName: name });
  observer = createPool(env.config.DATABASE_URL!, { max: 1, applicationName: `${name}_observer` });
});
afterAll(async () => {
  await pool?.end();
  await observer?.end();
  await env?.close();
});

const open = async () =>
  (
    await observer.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
      [name],
    )
  ).rows[0]!.n;

test('connections a burst opened are still open after 12 s idle', { timeout: 30_000 }, async () => {
  await Promise.all([1, 2, 3, 4].map(() => pool.query('SELECT pg_sleep(0.2)')));
  expect(pool.totalCount).toBe(4);
  expect(await open()).toBe(4);
  await sleep(12_000);
  expect(pool.totalCount).toBe(4);
  expect(await open()).toBe(4);
});
