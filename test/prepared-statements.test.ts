import { sql } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createDb, type Db } from '../src/adapters/postgres/db.js';
import { MAX_PREPARED_PER_CONNECTION } from '../src/adapters/postgres/prepared-statements.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let db: Db; // one connection: every statement below runs on it
beforeAll(async () => {
  env = await openTestEnv();
  db = createDb(env.config.DATABASE_URL!, { max: 1 });
});
afterAll(async () => {
  await db?.destroy();
  await env?.close();
});

const preparedHere = async () =>
  (
    await sql<{ name: string; statement: string }>`
      SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'lf\\_%'`.execute(db)
  ).rows;

test('a statement runs prepared on its connection: parsed and planned once, then reused', async () => {
  const query = () => db.selectFrom('accounts').select('handle').where('handle', '=', 'nobody').execute();
  await query();
  await query();
  const prepared = (await preparedHere()).filter((p) => p.statement.includes('"handle" = $1'));
  // One entry for the text however often it ran (the listing query itself is one more).
  expect(prepared).toHaveLength(1);
  expect(prepared[0]!.name).toMatch(/^lf_/);
});

test('a prepared select * whose table gained a column runs again, with the new column', async () => {
  await sql`CREATE TABLE prep_probe (id int PRIMARY KEY)`.execute(db);
  await sql`INSERT INTO prep_probe VALUES (1)`.execute(db);
  const read = () =>
    db
      .selectFrom('prep_probe' as never)
      .selectAll()
      .where(sql.ref('id'), '>', 0)
      .execute();
  expect(await read()).toEqual([{ id: 1 }]);
  // Postgres refuses to run the old plan now ("cached plan must not change result type").
  await sql`ALTER TABLE prep_probe ADD COLUMN note text DEFAULT 'added'`.execute(db);
  expect(await read()).toEqual([{ id: 1, note: 'added' }]);
  expect(await read()).toEqual([{ id: 1, note: 'added' }]);
});

test('a statement without parameters runs as a plain query: several commands in one text work', async () => {
  await sql`CREATE TABLE prep_multi (id int); INSERT INTO prep_multi VALUES (7)`.execute(db);
  expect((await sql<{ id: number }>`SELECT id FROM prep_multi`.execute(db)).rows).toEqual([{ id: 7 }]);
  expect((await preparedHere()).some((p) => p.statement.includes('prep_multi'))).toBe(false);
});

test('past the per-connection cap, further statements still run, unprepared', async () => {
  const extra = 20;
  for (let k = 0; k < MAX_PREPARED_PER_CONNECTION + extra; k++) {
    const { rows } = await sql<{ v: number }>`SELECT ${sql.lit(k)}::int + ${1}::int AS v`.execute(db);
    expect(rows[0]!.v).toBe(k + 1);
  }
  expect((await preparedHere()).length).toBeLessThanOrEqual(MAX_PREPARED_PER_CONNECTION);
});
