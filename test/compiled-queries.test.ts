import { sql } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { compiledQuery } from '../src/adapters/postgres/compiled-queries.js';
import { createDb, type Db } from '../src/adapters/postgres/db.js';
import { openTestEnv, type TestEnv } from './support/test-env.js';

let env: TestEnv;
let db: Db; // one connection: pg_prepared_statements below sees every statement it ran
beforeAll(async () => {
  env = await openTestEnv();
  db = createDb(env.config.DATABASE_URL!, { max: 1 });
  await sql`CREATE TABLE compiled_probe (id int PRIMARY KEY, kind text NOT NULL, tags text[] NOT NULL)`.execute(
    db,
  );
  await sql`INSERT INTO compiled_probe
            SELECT n, CASE WHEN n % 2 = 0 THEN 'even' ELSE 'odd' END, ARRAY['t' || n]
              FROM generate_series(1, 20) AS n`.execute(db);
});
afterAll(async () => {
  await db?.destroy();
  await env?.close();
});

type Probe = { id: number; kind: string; tags: string[] };
const probes = (d: Db) =>
  d
    .selectFrom('compiled_probe' as never)
    .select([sql<number>`id`.as('id'), sql<string>`kind`.as('kind'), sql<string[]>`tags`.as('tags')]);

test('each run binds its own values and answers what the query built afresh answers', async () => {
  // A constant of the build ('odd') stays bound beside the named values.
  const page = compiledQuery((d, v: { below: number; limit: number }) =>
    probes(d)
      .where(sql.ref('kind'), '=', 'odd')
      .where(sql.ref('id'), '<', v.below)
      .orderBy(sql.ref('id'), 'desc')
      .limit(v.limit),
  );
  const fresh = (below: number, limit: number) =>
    probes(db)
      .where(sql.ref('kind'), '=', 'odd')
      .where(sql.ref('id'), '<', below)
      .orderBy(sql.ref('id'), 'desc')
      .limit(limit)
      .execute();

  for (const [below, limit] of [
    [21, 3],
    [10, 2],
    [4, 10],
    [1, 5],
  ] as const) {
    const rows = await page(db, { below, limit });
    expect(rows).toEqual(await fresh(below, limit));
  }
  expect((await page(db, { below: 10, limit: 2 })).map((row: Probe) => row.id)).toEqual([9, 7]);
});

test('an array value is bound as one parameter (ANY($1))', async () => {
  const byIds = compiledQuery((d, v: { ids: number[] }) =>
    probes(d)
      .where(sql.ref('id'), '=', sql<number>`ANY(${v.ids}::int[])`)
      .orderBy(sql.ref('id')),
  );
  expect((await byIds(db, { ids: [3, 5, 99] })).map((row) => row.id)).toEqual([3, 5]);
  expect((await byIds(db, { ids: [20] })).map((row) => row.tags)).toEqual([['t20']]);
  expect(await byIds(db, { ids: [] })).toEqual([]);
});

test('the query is built once, and its SQL prepared once on the connection, however often it runs', async () => {
  // Kysely prints the same text for the same shape anyway: what this helper saves is the build.
  let builds = 0;
  const byKind = compiledQuery((d, v: { kind: string }) => {
    builds++;
    return probes(d).where(sql.ref('kind'), '=', v.kind).where(sql.ref('id'), '>', 15);
  });
  for (const kind of ['even', 'odd', 'even', 'none']) await byKind(db, { kind });
  expect(builds).toBe(1);
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_prepared_statements
     WHERE statement LIKE '%compiled_probe%' AND statement LIKE '%> $2%'`.execute(db);
  expect(rows[0]!.n).toBe(1);
});

test('a value turned into SQL text, or read but never bound, fails loudly at the first run', async () => {
  const asText = compiledQuery((d, v: { kind: string }) =>
    probes(d).where(sql.ref('kind'), '=', sql.raw(`'${v.kind}'`)),
  );
  await expect(asText(db, { kind: 'odd' })).rejects.toThrow(/parameter "kind" must stay a bound value/);

  // A build that branches on a value would compile one branch for every run.
  const branching = compiledQuery((d, v: { limit: number }) => (v.limit ? probes(d) : probes(d).limit(1)));
  await expect(branching(db, { limit: 5 })).rejects.toThrow(
    /parameter "limit" was read by the build but is not bound/,
  );
});
