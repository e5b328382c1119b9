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
import { intSetting, passes, targetMark } from './bench-settings.js';
import { runBench, startBenchService } from './bench-service.js';
import { CONNECTIONS, load, plainServer, sample } from './http-load.js';

const TARGET_REST_RATIO = 0.4;
const TARGET_GRAPHQL_RATIO = 0.25;
const TARGET_P99_MS = 50;

async function main(): Promise<number> {
  const posts = intSetting('BENCH_POSTS', 2_000, 20, 50);
  const seconds = intSetting('BENCH_SECONDS', 8, 1, 1);
  const { service, stop } = await startBenchService(['api']);
  try {
    const { app } = service;
    const base = service.apiUrl!;
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
    const auth = { authorization: `Bearer ${key}` };
    const graphqlBody = JSON.stringify({
      query:
        '{ feed(sort: LATEST, first: 20) { edges { node { id content type likeCount replyCount repostCount createdAt author { handle displayName } } } pageInfo { endCursor hasNextPage } } }',
    });
    const targets = [
      {
        name: 'REST /feed?sort=latest',
        url: `${base}/api/v1/feed?sort=latest&limit=20`,
        options: { headers: auth },
        ratio: TARGET_REST_RATIO,
      },
      {
        name: 'REST /feed?sort=trending',
        url: `${base}/api/v1/feed?sort=trending&limit=20`,
        options: { headers: auth },
        ratio: TARGET_REST_RATIO,
      },
      {
        name: 'GraphQL feed(LATEST, 20)',
        url: `${base}/graphql`,
        options: {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: graphqlBody,
        },
        ratio: TARGET_GRAPHQL_RATIO,
      },
    ];
    console.log(
      `feed bench: ${os.cpus().length} cores, ${posts} posts, ${CONNECTIONS} connections, ${seconds} s per run`,
    );
    let ok = true;
    for (const target of targets) {
      // The plain server answers the very bytes the route answers.
      const { status, bytes } = await sample(target.url, target.options);
      if (status !== 200) throw new Error(`${target.name} answered ${status}: ${bytes.toString()}`);
      const plain = await plainServer(bytes);
      const ceiling = await load(plain.url, seconds);
      await plain.close();
      const measured = await load(target.url, seconds, target.options);
      const ratio = measured.requestsPerSecond / ceiling.requestsPerSecond;
      // Checks (held in a smoke run too): every read answered 2xx, and some were.
      const clean = measured.errors + measured.non2xx === 0 && measured.answered > 0;
      const met = ratio >= target.ratio && measured.p99Ms < TARGET_P99_MS;
      ok &&= passes(clean, met);
      console.log(
        `${clean ? targetMark(met) : 'FAIL'} ${target.name.padEnd(26)} ${measured.requestsPerSecond.toFixed(0).padStart(6)} req/s` +
          ` = ${(ratio * 100).toFixed(0)}% of plain ${ceiling.requestsPerSecond.toFixed(0)} (target >= ${target.ratio * 100}%),` +
          ` p99 ${measured.p99Ms} ms (target < ${TARGET_P99_MS}), ${bytes.length} bytes` +
          (measured.errors + measured.non2xx > 0
            ? `, ${measured.errors} errors, ${measured.non2xx} non-2xx`
            : '') +
          (measured.answered === 0 ? ', NO read answered' : ''),
      );
    }
    console.log(`${ok ? 'PASS' : 'FAIL'}: feed`);
    return ok ? 0 : 1;
  } finally {
    await stop();
  }
}

runBench(main);
