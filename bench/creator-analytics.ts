/**
 * Creator analytics over ten million engagement and earning rows (issue 51):
 *
 *   npm run bench:creator-analytics
 *
 * The service (roles api and worker in one process, so ClickHouse is the embedded chdb inside it)
 * on a fresh embedded stack. bench/creator-analytics-seed.ts writes straight into both stores:
 * BENCH_ACCOUNTS (20,000) accounts, of which BENCH_CREATORS (1,000) creators; the measured creator
 * (account 0, `bench_u0`) with BENCH_POSTS (5,000) posts over 400 days, every other creator 200;
 * about BENCH_ROWS (10,000,000) rows of post_engagement (likes, unlikes, replies, quotes, reposts,
 * each with its actor) and creator_earnings (the paid ones: source, post, payer, micro-USD) spread
 * evenly over the 400 days, 5 % of them on the measured creator's posts; in Postgres the accounts,
 * every post with its payment, the measured creator's paid engagements as ledger movements (the
 * same leg ids as in creator_earnings) and 5,000 followers.
 *
 * Then the five reads of the issue through POST /graphql with the measured creator's own API key,
 * one after the other, each BENCH_WARMUPS (3) times uncounted then BENCH_QUERIES (30) times:
 *   1. creatorEarnings by SOURCE per DAY over 400 days
 *   2. creatorEarnings by POST per DAY over 90 days
 *   3. postEarnings, first page (20) ordered by EARNED over 400 days, each node's post loaded
 *   4. postStats per DAY over 90 days, of the 20 posts that earned most in read 2, in turn
 *   5. audience over 90 days
 * Each call's range ends a minute earlier than the one before, so no two are the same request (the
 * GraphQL response cache keeps only feed, post, user and trending answers anyway). Latency: from
 * the request to the answer's last byte, in this process (the service's own event loop). Target:
 * **p95 of each < 500 ms**. Checks: every answer 200 without errors and not empty; the rows
 * ClickHouse holds = the plan's; Σ of read 1's buckets (one range) = Σ of the creator's earned
 * legs in Postgres over that range, to the micro-dollar.
 *
 * While the reads run, a writer inserts what the shipper would under a busy write path (300 likes/s
 * + 100 paid engagements/s, BENCH_WRITE_LIKES / BENCH_WRITE_PAID, one batch every 250 ms): new
 * parts in the newest partition that FINAL reads merge until background merges catch up.
 *
 * Before the reads, the seeded parts are merged (OPTIMIZE ... FINAL: the state background merges
 * settle to; BENCH_MERGE=0 measures the parts as inserted, several per monthly partition).
 *
 * A smoke run (BENCH_SMOKE=1): 20,000 rows, 10 creators, 200 accounts, 100 posts, 1 + 3 calls each.
 */
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import { intSetting, sized, SMOKE } from './bench-settings.js';
import {
  accountUuid,
  insertLiveEngagement,
  planCreatorSeed,
  seedCreatorClickHouse,
  seedCreatorPostgres,
  totalPosts,
} from './creator-analytics-seed.js';
import { seededLegs, userHandle } from './reports-seed.js';
import { runBench } from './runner.js';
import { formatMs, percentile } from './stats.js';

const TARGET_P95_MS = 500;
const DAY_MS = 86_400_000;
const SPAN_DAYS = 400;
/** Each call's range ends this much before the previous call's. */
const STEP_MS = 60_000;

const fmt = (n: number) => n.toLocaleString('en');

interface GraphqlAnswer {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string }>;
}

interface Read {
  name: string;
  query: string;
  /** The variables of call `k` (0-based over warm-ups and counted calls), its range ending at `to`. */
  variables: (to: Date, k: number) => Record<string, unknown>;
  /** A problem with the answer's data, or undefined when it is a real answer. */
  empty: (data: Record<string, unknown>) => string | undefined;
}

runBench(async (bench) => {
  const targetRows = intSetting('BENCH_ROWS', 10_000_000, 1_000, 20_000);
  const creators = intSetting('BENCH_CREATORS', 1_000, 2, 10);
  const accounts = intSetting('BENCH_ACCOUNTS', 20_000, creators + 1, 200);
  const measuredPosts = intSetting('BENCH_POSTS', 5_000, 1, 100);
  const queries = intSetting('BENCH_QUERIES', 30, 1, 3);
  const warmups = intSetting('BENCH_WARMUPS', 3, 0, 1);
  // The span ends at today's UTC midnight: every read's range ends within the seeded days.
  const endMs = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const plan = planCreatorSeed({
    targetRows,
    accounts,
    creators,
    measuredPosts,
    otherPosts: sized(200, 20),
    follows: sized(5_000, 50),
    startMs: endMs - SPAN_DAYS * DAY_MS,
    endMs,
  });
  const service = await bench.startService(['api', 'worker']);
  const app = service.app;
  if ((await seededLegs(app.db)) > 0) console.log('(the stack holds legs already)');

  const seeding = performance.now();
  const progress = (text: string) =>
    console.log(`  ${((performance.now() - seeding) / 1000).toFixed(0).padStart(4)} s  ${text}`);
  console.log(
    `seeding ${fmt(plan.events)} engagement events + ${fmt(plan.earnings)} earnings = ` +
      `${fmt(plan.events + plan.earnings)} rows over ${SPAN_DAYS} days, ${fmt(creators)} creators, ` +
      `${fmt(accounts)} accounts, ${fmt(totalPosts(plan))} posts; the measured creator @${userHandle(0)}: ` +
      `${fmt(measuredPosts)} posts, ${fmt(plan.measuredEvents)} events, ${fmt(plan.measuredPaid)} earnings`,
  );
  const firstLegId = await seedCreatorPostgres(app.db, plan, progress);
  const pgSeconds = (performance.now() - seeding) / 1000;
  await seedCreatorClickHouse(app.clickhouse, plan, firstLegId, progress);
  console.log(
    `seeded in ${((performance.now() - seeding) / 1000).toFixed(0)} s (Postgres ${pgSeconds.toFixed(0)} s, ` +
      `ClickHouse ${((performance.now() - seeding) / 1000 - pgSeconds).toFixed(0)} s)`,
  );

  // ClickHouse holds the plan's rows (a fresh stack: nothing else wrote these tables).
  const ch = app.clickhouse;
  const counted = await (
    await ch.client.query({
      query: `SELECT (SELECT count() FROM ${ch.table('post_engagement')}) AS engagement,
                     (SELECT count() FROM ${ch.table('creator_earnings')}) AS earnings,
                     (SELECT count() FROM ${ch.table('creator_posts')}) AS posts`,
      format: 'JSONEachRow',
    })
  ).json<{ engagement: string; earnings: string; posts: string }>();
  const held = counted[0];
  const rowsOk = bench.check(
    Number(held?.engagement) === plan.events &&
      Number(held?.earnings) === plan.earnings &&
      Number(held?.posts) === totalPosts(plan),
  );
  console.log(
    `${rowsOk ? 'ok' : 'FAIL'} ClickHouse: ${held?.engagement} post_engagement, ${held?.earnings} creator_earnings, ` +
      `${held?.posts} creator_posts (planned ${plan.events}, ${plan.earnings}, ${totalPosts(plan)})`,
  );

  // Seeding leaves several parts per monthly partition, which every FINAL read merges on the fly;
  // background merges bring a live table down to about one. BENCH_MERGE=1 (the default) merges
  // them now (OPTIMIZE ... FINAL), so the reads are measured on the state merges settle to; 0
  // measures them on the parts as inserted.
  const parts = async () =>
    (
      await (
        await ch.client.query({
          query: `SELECT table, toString(count()) AS parts FROM system.parts
                   WHERE database = {db:String} AND active
                     AND table IN ('post_engagement', 'creator_earnings', 'creator_posts')
                   GROUP BY table ORDER BY table`,
          query_params: { db: ch.database },
          format: 'JSONEachRow',
        })
      ).json<{ table: string; parts: string }>()
    )
      .map((row) => `${row.table} ${row.parts}`)
      .join(', ');
  console.log(`active parts: ${await parts()}`);
  if (intSetting('BENCH_MERGE', 1, 0) === 1) {
    const merging = performance.now();
    for (const table of ['post_engagement', 'creator_earnings', 'creator_posts'])
      await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table(table)} FINAL` });
    console.log(
      `merged (OPTIMIZE ... FINAL) in ${((performance.now() - merging) / 1000).toFixed(0)} s: ${await parts()}`,
    );
  }

  const creatorKey = (await createApiKey(app.apiKeys, accountUuid(0))).key;
  const graphql = async (query: string, variables: Record<string, unknown>) => {
    const started = performance.now();
    const response = await fetch(`${service.apiUrl!}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${creatorKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const text = await response.text();
    return { ms: performance.now() - started, status: response.status, bytes: text.length, text };
  };

  const handle = userHandle(0);
  const range = (to: Date, days: number) => ({
    from: new Date(to.getTime() - days * DAY_MS).toISOString(),
    to: to.toISOString(),
  });
  const listOf = (data: Record<string, unknown>, field: string) => data[field] as unknown[];
  // postStats asks for the 20 posts that earned most in read 2's first answer (90 days), in turn.
  const topPosts: string[] = [];
  let statsSeries = 0;
  const reads: Read[] = [
    {
      name: 'creatorEarnings SOURCE, DAY, 400 days',
      query: `query ($handle: String!, $from: DateTime!, $to: DateTime!) {
        creatorEarnings(handle: $handle, from: $from, to: $to, granularity: DAY, groupBy: SOURCE) {
          bucket amountUsdMicro source } }`,
      variables: (to) => ({ handle, ...range(to, SPAN_DAYS) }),
      empty: (data) => (listOf(data, 'creatorEarnings').length === 0 ? 'no buckets' : undefined),
    },
    {
      name: 'creatorEarnings POST, DAY, 90 days',
      query: `query ($handle: String!, $from: DateTime!, $to: DateTime!) {
        creatorEarnings(handle: $handle, from: $from, to: $to, granularity: DAY, groupBy: POST) {
          bucket amountUsdMicro postId } }`,
      variables: (to) => ({ handle, ...range(to, 90) }),
      empty: (data) => {
        const buckets = listOf(data, 'creatorEarnings') as Array<{ postId: string; amountUsdMicro: string }>;
        if (topPosts.length === 0) {
          const byPost = new Map<string, bigint>();
          for (const b of buckets)
            byPost.set(b.postId, (byPost.get(b.postId) ?? 0n) + BigInt(b.amountUsdMicro));
          const ranked = [...byPost].sort(([, a], [, b]) => (a < b ? 1 : a > b ? -1 : 0));
          topPosts.push(...ranked.slice(0, 20).map(([id]) => id));
        }
        return buckets.length === 0 ? 'no buckets' : undefined;
      },
    },
    {
      name: 'postEarnings EARNED, first 20, 400 days',
      query: `query ($handle: String!, $from: DateTime!, $to: DateTime!) {
        postEarnings(handle: $handle, from: $from, to: $to, orderBy: EARNED, first: 20) {
          edges { cursor node { postId post { id content createdAt likeCount author { handle } }
                                createdAt earnedUsdMicro likes replies quotes reposts } }
          pageInfo { hasNextPage endCursor } } }`,
      variables: (to) => ({ handle, ...range(to, SPAN_DAYS) }),
      empty: (data) => {
        const edges = (data.postEarnings as { edges: Array<{ node: { post: unknown } }> }).edges;
        if (edges.length === 0) return 'no edges';
        const missing = edges.filter((edge) => edge.node.post === null).length;
        return missing > 0 ? `${missing} of ${edges.length} posts not loaded (null)` : undefined;
      },
    },
    {
      name: 'postStats DAY, 90 days',
      query: `query ($id: ID!, $from: DateTime!, $to: DateTime!) {
        postStats(id: $id, from: $from, to: $to, granularity: DAY) {
          likes replies quotes reposts earnedUsdMicro
          series { bucket earnedUsdMicro likes replies quotes reposts } } }`,
      variables: (to, k) => ({ id: topPosts[k % Math.max(1, topPosts.length)], ...range(to, 90) }),
      // A top post of the last 90 days may have no activity in a range a few minutes earlier: an
      // empty series is an answer; none at all over every call is not (checked after the calls).
      empty: (data) => {
        const series = (data.postStats as { series: unknown[] | null }).series;
        if (series === null) return 'series is null';
        if (series.length > 0) statsSeries++;
        return undefined;
      },
    },
    {
      name: 'audience, 90 days',
      query: `query ($handle: String!, $from: DateTime!, $to: DateTime!) {
        audience(handle: $handle, from: $from, to: $to) {
          uniqueEngagers payingEngagers newFollowers topSupporters { handle paidUsdMicro } } }`,
      variables: (to) => ({ handle, ...range(to, 90) }),
      empty: (data) => {
        const a = data.audience as { uniqueEngagers: number; topSupporters: unknown[] };
        return a.uniqueEngagers === 0 || a.topSupporters.length === 0
          ? 'no engagers or supporters'
          : undefined;
      },
    },
  ];

  console.log(
    `\n${warmups} warm-up(s) then ${queries} calls of each read, one at a time, through POST /graphql ` +
      `(the creator's own key); target p95 < ${TARGET_P95_MS} ms`,
  );
  // Writes while the reads run, as the shipper makes them under a busy write path (the load
  // bench:read-under-writes names: 300 likes/s + 100 paid engagements/s), one batch every 250 ms:
  // new parts in the newest partition, which every FINAL read over it merges until background
  // merges catch up. BENCH_WRITE_LIKES / BENCH_WRITE_PAID (per second; 0 and 0: no writes).
  const likesPerSecond = intSetting('BENCH_WRITE_LIKES', 300, 0, 40);
  const paidPerSecond = intSetting('BENCH_WRITE_PAID', 100, 0, 20);
  const writer = { batches: 0, engagement: 0, earnings: 0, failed: 0, stop: false, ms: 0 };
  const writing = (async () => {
    const started = performance.now();
    for (let seq = 0; !writer.stop; seq++) {
      const due = started + seq * 250;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (writer.stop) break;
      const likes = Math.round(((seq + 1) * likesPerSecond) / 4) - Math.round((seq * likesPerSecond) / 4);
      const paid = Math.round(((seq + 1) * paidPerSecond) / 4) - Math.round((seq * paidPerSecond) / 4);
      try {
        await insertLiveEngagement(ch, plan, { seq, likes, paid });
        writer.batches++;
        writer.engagement += likes + paid;
        writer.earnings += paid;
      } catch (error) {
        if (writer.failed++ === 0) bench.problem(`a write during the reads failed: ${String(error)}`);
      }
    }
    writer.ms = performance.now() - started;
  })();

  const results: string[] = [];
  let sumChecked = false;
  for (const read of reads) {
    const times: number[] = [];
    let bytes = 0;
    let failed = 0;
    for (let k = 0; k < warmups + queries; k++) {
      const to = new Date(endMs - k * STEP_MS);
      const variables = read.variables(to, k);
      const answer = await graphql(read.query, variables);
      let parsed: GraphqlAnswer | undefined;
      try {
        parsed = JSON.parse(answer.text) as GraphqlAnswer;
      } catch {
        parsed = undefined;
      }
      const wrong =
        answer.status !== 200 || !parsed?.data || parsed.errors?.length
          ? `${answer.status} ${answer.text.slice(0, 300)}`
          : read.empty(parsed.data);
      if (wrong !== undefined) {
        failed++;
        if (failed <= 3) bench.problem(`${read.name}, call ${k}: ${wrong}`);
        continue;
      }
      if (k >= warmups) {
        times.push(answer.ms);
        bytes = Math.max(bytes, answer.bytes);
      }
      // The exact sum: read 1's first counted answer against the creator's earned legs in Postgres.
      if (!sumChecked && read === reads[0] && k >= warmups) {
        sumChecked = true;
        const window = range(to, SPAN_DAYS); // read 1's range
        const buckets = listOf(parsed!.data!, 'creatorEarnings') as Array<{ amountUsdMicro: string }>;
        const api = buckets.reduce((sum, b) => sum + BigInt(b.amountUsdMicro), 0n);
        const { rows } = await sql<{ total: string | null }>`
          SELECT sum(l.amount)::text AS total
            FROM ledger_legs l
            JOIN ledger_movements m ON m.id = l.movement_id
            JOIN ledger_accounts a ON a.id = l.ledger_account_id
           WHERE a.account_id = ${accountUuid(0)}::uuid AND a.currency = 'usdc' AND l.counts = 'earned'
             AND m.created_at >= ${new Date(window.from)} AND m.created_at < ${new Date(window.to)}`.execute(
          app.db,
        );
        const pg = BigInt(rows[0]?.total ?? 0);
        const equal = bench.check(api === pg && api > 0n);
        console.log(
          `${equal ? 'ok' : 'FAIL'} Σ creatorEarnings by source over ${window.from} .. ${window.to} = ` +
            `${api} micro-USD; Σ of @${handle}'s earned legs in Postgres ${pg}`,
        );
      }
    }
    const sorted = [...times].sort((a, b) => a - b);
    const p95 = percentile(sorted, 95);
    const met = sorted.length > 0 && failed === 0 && p95 < TARGET_P95_MS;
    console.log(
      `${bench.target(met)} ${read.name.padEnd(42)} p50 ${formatMs(percentile(sorted, 50)).padStart(5)} ms, ` +
        `p95 ${formatMs(p95).padStart(5)} ms (target < ${TARGET_P95_MS}), max ${formatMs(sorted.at(-1) ?? Number.NaN).padStart(5)} ms; ` +
        `${sorted.length} calls${failed > 0 ? `, ${failed} failed` : ''}, answer up to ${fmt(Math.round(bytes / 1024))} KB`,
    );
    results.push(`${read.name.split(',')[0]} p95 ${formatMs(p95)} ms`);
  }
  writer.stop = true;
  await writing;
  const written = writer.engagement + writer.earnings;
  console.log(
    `writes during the reads: ${writer.batches} batches, ${fmt(written)} rows into post_engagement and ` +
      `creator_earnings over ${(writer.ms / 1000).toFixed(0)} s (${fmt(Math.round((written * 1000) / Math.max(1, writer.ms)))} rows/s; ` +
      `asked ${likesPerSecond} likes/s + ${paidPerSecond} paid/s)${writer.failed > 0 ? `, ${writer.failed} failed` : ''}`,
  );
  const afterWrites = (
    await (
      await ch.client.query({
        query: `SELECT toString((SELECT count() FROM ${ch.table('post_engagement')})) AS engagement,
                       toString((SELECT count() FROM ${ch.table('creator_earnings')})) AS earnings`,
        format: 'JSONEachRow',
      })
    ).json<{ engagement: string; earnings: string }>()
  )[0];
  const landed = bench.check(
    Number(afterWrites?.engagement) === plan.events + writer.engagement &&
      Number(afterWrites?.earnings) === plan.earnings + writer.earnings,
  );
  console.log(
    `${landed ? 'ok' : 'FAIL'} the writes landed: ${afterWrites?.engagement} post_engagement, ` +
      `${afterWrites?.earnings} creator_earnings (seeded + written: ${plan.events + writer.engagement}, ` +
      `${plan.earnings + writer.earnings})`,
  );
  if (statsSeries === 0) bench.problem('postStats: no call answered a bucket');
  if (!sumChecked) bench.problem('the Σ against Postgres was not checked (creatorEarnings by source failed)');
  if (SMOKE) console.log('(smoke: the figures above mean nothing)');
  return `creator analytics over ${fmt(plan.events + plan.earnings)} rows: ${results.join('; ')}`;
});
