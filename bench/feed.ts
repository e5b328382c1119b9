/**
 * Benchmark of the read-path issue: the REST feed (latest and trending, 20 items) and the GraphQL
 * feed query, each beside a plain `node:http` server answering the same bytes, in the same run.
 *
 *   npm run bench:feed
 *
 * The service (role api) runs in this process on a fresh DATA_DIR with the embedded stack;
 * BENCH_POSTS posts (with likes) are written straight into Postgres (not timed). The load comes
 * from autocannon in a child process (50 connections, BENCH_SECONDS each), so the generator's CPU
 * is not the server's event loop. Targets: REST >= 40% and GraphQL >= 25% of the plain server's
 * requests/s, p99 < 50 ms. A missed target exits 1. The machine is shared and noisy: read the
 * ratios, which come from one run.
 */
import os from 'node:os';
import { sql } from 'kysely';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { intSetting } from './bench-settings.js';
import { feedRoutes } from './feed-routes.js';
import { allAnswered2xx, CONNECTIONS, load, plainCeiling } from './http-load.js';
import { runBench } from './runner.js';

const TARGET_REST_RATIO = 0.4;
const TARGET_GRAPHQL_RATIO = 0.25;
const TARGET_P99_MS = 50;

runBench(async (bench) => {
  const posts = intSetting('BENCH_POSTS', 2_000, 20, 50);
  const seconds = intSetting('BENCH_SECONDS', 8, 1, 1);
  const service = await bench.startService(['api']);
  const { app } = service;
  const author = await createAccount(app, { handle: 'bench_author' });
  const { key } = await createApiKey(app.apiKeys, author.id, ['read']);
  // Posts as the write path leaves them (movement, confirmed outbox row), written in bulk.
  await sql`
    WITH m AS (
      INSERT INTO ledger_movements (kind) SELECT 'post' FROM generate_series(1, ${posts}::int) RETURNING id),
    numbered AS (SELECT id, row_number() OVER () AS n FROM m),
    c AS (
      INSERT INTO chain_transactions (movement_id, signature, wire, blockhash, last_valid_block_height, status)
      SELECT id, 'bench' || n, '\\x00'::bytea, 'bench', 0, 'confirmed' FROM numbered)
    INSERT INTO posts (author_id, type, content, movement_id, created_at)
    SELECT ${author.id}::uuid, 'post', 'bench post #' || n, id, now() - make_interval(secs => n)
      FROM numbered`.execute(app.db);
  console.log(
    `feed bench: ${os.cpus().length} cores, ${posts} posts, ${CONNECTIONS} connections, ${seconds} s per run`,
  );
  for (const route of feedRoutes(service.apiUrl!, key)) {
    // The plain server answers the very bytes the route answers.
    const { bytes, ceiling, plain } = await plainCeiling(route.name, route, seconds, {});
    await plain.close();
    const measured = await load(route.url, seconds, route.options);
    const ratio = measured.requestsPerSecond / ceiling.requestsPerSecond;
    const target = route.graphql ? TARGET_GRAPHQL_RATIO : TARGET_REST_RATIO;
    const mark = bench.mark(allAnswered2xx(measured), ratio >= target && measured.p99Ms < TARGET_P99_MS);
    console.log(
      `${mark} ${route.name.padEnd(26)} ${measured.requestsPerSecond.toFixed(0).padStart(6)} req/s` +
        ` = ${(ratio * 100).toFixed(0)}% of plain ${ceiling.requestsPerSecond.toFixed(0)} (target >= ${target * 100}%),` +
        ` p99 ${measured.p99Ms} ms (target < ${TARGET_P99_MS}), ${bytes.length} bytes` +
        (measured.errors + measured.non2xx > 0
          ? `, ${measured.errors} errors, ${measured.non2xx} non-2xx`
          : '') +
        (measured.answered === 0 ? ', NO read answered' : ''),
    );
  }
  return 'feed';
});
