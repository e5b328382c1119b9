/**
 * Benchmark of issue 21 item 4: our feed beside PostGraphile v4 on the same Postgres, the same
 * data and the equivalent query, with our read caches off (every request is a miss).
 *
 *   npm run bench:read-peer
 *
 * The service (role api, READ_CACHE_TTL_MS=0, rate limits off) runs in this process on a fresh
 * embedded stack; BENCH_POSTS posts with replies, likes, reposts and some failed payments are
 * written straight into Postgres (bench/read-seed.ts). PostGraphile runs as its CLI in a child
 * process against that database (bench/postgraphile-peer.ts). The query, on every side: the latest
 * 20 posts with id, content, type, created time, author handle and display name, like, reply and
 * repost counts, and the page info a client needs to page on.
 *
 * - ours, GraphQL: feed(sort: LATEST, first: 20)
 * - ours, REST:    GET /api/v1/feed?sort=latest&limit=20
 * - PostGraphile, relations: posts(first: 20, orderBy: [CREATED_AT_DESC, ID_DESC]) (allPosts
 *   without the simplify inflector) with
 *   `author`, and the counts as `likes { totalCount }`, `childPosts { totalCount }`,
 *   `reposts { totalCount }`: what a PostGraphile user writes over the tables as they are. It
 *   cannot hide failed payments without a change to the schema, so it does less than ours (the
 *   seed keeps failed rows off the first page, so the answers still match).
 * - PostGraphile, stored columns (only when posts has like_count, reply_count, repost_count and
 *   failed): the same with `condition: { failed: false }` and the stored counts.
 *
 * Before measuring, every side must answer the same 20 ids (and counts), else a warning. Then
 * BENCH_ROUNDS rounds, each running every side once for BENCH_SECONDS (50 connections, autocannon
 * in a child process), in alternation, after one BENCH_WARMUP_SECONDS run of each. The targets
 * compare medians of the per-round ratios against the FASTER PostGraphile variant (the one with
 * the higher median req/s): GraphQL >= 1.0x, REST >= 1.5x. A missed target exits 1.
 */
import os from 'node:os';
import { sql } from 'kysely';
import type { RunningService } from '../src/service.js';
import { intSetting } from './bench-settings.js';
import {
  allAnswered2xx,
  CONNECTIONS,
  graphqlRequest,
  load,
  sample,
  warmUp,
  type Load,
  type Target,
} from './http-load.js';
import { cpuTimes, describeCpu } from './machine-cpu.js';
import { startPostGraphile } from './postgraphile-peer.js';
import { seedReadData } from './read-seed.js';
import { runBench, type Bench } from './runner.js';
import { median } from './stats.js';

const TARGET_GRAPHQL_RATIO = 1.0;
const TARGET_REST_RATIO = 1.5;
const PAGE = 20;

/** One post of a first page, as every side's answer is reduced to compare them. */
interface PagePost {
  id: string;
  likes: number;
  replies: number;
  reposts: number;
}

interface Side extends Target {
  name: string;
  peer: boolean;
  /** The page's posts from the side's answer (throws on an answer that is not a page). */
  posts: (body: unknown) => PagePost[];
}

const OUR_QUERY =
  '{ feed(sort: LATEST, first: 20) { edges { node { id content type createdAt likeCount replyCount repostCount author { handle displayName } } } pageInfo { endCursor hasNextPage } } }';
const PEER_RELATIONS_QUERY =
  '{ posts(first: 20, orderBy: [CREATED_AT_DESC, ID_DESC]) { edges { node { id content type createdAt author { handle displayName } likes { totalCount } childPosts { totalCount } reposts { totalCount } } } pageInfo { endCursor hasNextPage } } }';
const PEER_STORED_QUERY =
  '{ posts(first: 20, orderBy: [CREATED_AT_DESC, ID_DESC], condition: { failed: false }) { edges { node { id content type createdAt likeCount replyCount repostCount author { handle displayName } } } pageInfo { endCursor hasNextPage } } }';

/** `data.<field>.edges[].node` of a GraphQL answer; GraphQL errors throw. */
function edges(body: unknown, field: string): Record<string, unknown>[] {
  const answer = body as {
    data?: Record<string, { edges?: { node: Record<string, unknown> }[] }>;
    errors?: unknown;
  };
  if (answer.errors) throw new Error(`GraphQL errors: ${JSON.stringify(answer.errors).slice(0, 500)}`);
  const list = answer.data?.[field]?.edges;
  if (!Array.isArray(list)) throw new Error(`no ${field}.edges in ${JSON.stringify(body).slice(0, 300)}`);
  return list.map((edge) => edge.node);
}

const totalCount = (value: unknown) => (value as { totalCount: number }).totalCount;

/** A post of a GraphQL page with the counts as fields (likeCount, replyCount, repostCount). */
const storedCounts = (node: Record<string, unknown>): PagePost => ({
  id: node.id as string,
  likes: node.likeCount as number,
  replies: node.replyCount as number,
  reposts: node.repostCount as number,
});

/** Whether Helper A's stored counters (migration 2026_11_24_f) are in this database. */
async function hasStoredCounters(service: RunningService): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM information_schema.columns
     WHERE table_schema = 'public' AND table_name = 'posts'
       AND column_name IN ('failed', 'like_count', 'reply_count', 'repost_count')`.execute(service.app.db);
  return rows[0]!.n === 4;
}

const describe = (posts: readonly PagePost[]) =>
  posts.map((p) => `${p.id.slice(0, 8)}:${p.likes}/${p.replies}/${p.reposts}`).join(' ');

async function main(bench: Bench): Promise<string> {
  const posts = intSetting('BENCH_POSTS', 2_000, 500, 500);
  const authors = intSetting('BENCH_AUTHORS', 20, 2, 5);
  const seconds = intSetting('BENCH_SECONDS', 8, 1, 1);
  const rounds = intSetting('BENCH_ROUNDS', 3, 1, 1);
  const warmupSeconds = intSetting('BENCH_WARMUP_SECONDS', 2, 0, 0);
  const service = await bench.startService(['api'], { READ_CACHE_TTL_MS: '0' });
  const seed = await seedReadData(service, { posts, authors, tag: 'peer' });
  const stored = await hasStoredCounters(service);
  const peer = await startPostGraphile(service.app.stack.postgres.url);
  bench.defer(peer.stop);
  const base = service.apiUrl!;
  const auth = { authorization: `Bearer ${seed.readKey}` };

  const ourGraphql: Side = {
    name: 'ours GraphQL feed(LATEST, 20)',
    peer: false,
    url: `${base}/graphql`,
    options: graphqlRequest(OUR_QUERY, auth),
    posts: (body) => edges(body, 'feed').map(storedCounts),
  };
  const relationsPeer: Side = {
    name: 'PostGraphile, relation counts',
    peer: true,
    url: peer.url,
    options: graphqlRequest(PEER_RELATIONS_QUERY),
    posts: (body) =>
      edges(body, 'posts').map((node) => ({
        id: node.id as string,
        likes: totalCount(node.likes),
        replies: totalCount(node.childPosts),
        reposts: totalCount(node.reposts),
      })),
  };
  const ourRest: Side = {
    name: 'ours REST /feed?sort=latest',
    peer: false,
    url: `${base}/api/v1/feed?sort=latest&limit=20`,
    options: { headers: auth },
    posts: (body) =>
      (body as { posts: Record<string, unknown>[] }).posts.map((post) => ({
        id: post.id as string,
        likes: post.like_count as number,
        replies: post.reply_count as number,
        reposts: post.repost_count as number,
      })),
  };
  const sides: Side[] = [ourGraphql, relationsPeer, ourRest];
  if (stored) {
    sides.push({
      name: 'PostGraphile, stored columns',
      peer: true,
      url: peer.url,
      options: graphqlRequest(PEER_STORED_QUERY),
      posts: (body) => edges(body, 'posts').map(storedCounts),
    });
  }

  console.log(
    `read-peer bench: ${os.cpus().length} cores, ${seed.posts} posts + ${seed.replies} replies by ${authors} authors,` +
      ` ${seed.likes} likes, ${seed.reposts} reposts, ${seed.failed} failed payments; our read caches off;` +
      ` ${CONNECTIONS} connections, ${rounds} rounds of ${seconds} s per side`,
  );
  console.log(
    stored
      ? 'PostGraphile runs two variants: relation counts (likes/childPosts/reposts { totalCount }, cannot hide failed' +
          ' payments) and stored columns (like_count..., condition failed=false); targets use the FASTER one'
      : 'PostGraphile runs one variant, relation counts (likes/childPosts/reposts { totalCount }, cannot hide failed' +
          ' payments): posts has no stored counter columns (migration 2026_11_24_f) in this tree',
  );

  // Same page everywhere before anything is measured.
  let reference: PagePost[] | undefined;
  let same = true;
  for (const side of sides) {
    const { status, bytes } = await sample(side.url, side.options);
    if (status !== 200) throw new Error(`${side.name} answered ${status}: ${bytes.toString().slice(0, 500)}`);
    const page = side.posts(JSON.parse(bytes.toString()));
    if (page.length !== PAGE) {
      same = false;
      console.log(`WARNING ${side.name} answered ${page.length} posts, not ${PAGE}`);
    }
    reference ??= page;
    if (describe(page) !== describe(reference)) {
      same = false;
      console.log(`WARNING ${side.name} answers a different page than ${ourGraphql.name}:`);
      console.log(`  ${ourGraphql.name}: ${describe(reference)}`);
      console.log(`  ${side.name}: ${describe(page)}`);
    }
  }
  if (same) {
    console.log(
      `every side answers the same ${PAGE} posts with the same counts (id:likes/replies/reposts):` +
        ` ${describe(reference!.slice(0, 4))} ...`,
    );
  }

  await warmUp(sides, warmupSeconds);

  const runs = new Map<Side, Load[]>(sides.map((side) => [side, []]));
  const cpuAtStart = cpuTimes();
  for (let round = 1; round <= rounds; round++) {
    for (const side of sides) {
      const result = await load(side.url, seconds, side.options);
      runs.get(side)!.push(result);
      const problems = result.errors + result.non2xx;
      console.log(
        `round ${round}  ${side.name.padEnd(31)} ${result.requestsPerSecond.toFixed(0).padStart(6)} req/s` +
          `  p50 ${result.p50Ms} ms  p99 ${result.p99Ms} ms` +
          (problems > 0 ? `  ${result.errors} errors, ${result.non2xx} non-2xx` : ''),
      );
    }
  }
  console.log(describeCpu(cpuAtStart, cpuTimes()));

  const rps = (side: Side) => runs.get(side)!.map((r) => r.requestsPerSecond);
  const peers = sides.filter((side) => side.peer);
  for (const side of sides) {
    console.log(`median ${side.name.padEnd(31)} ${median(rps(side)).toFixed(0).padStart(6)} req/s`);
  }
  const fastest = peers.reduce((best, side) => (median(rps(side)) > median(rps(best)) ? side : best));
  console.log(`the faster PostGraphile variant: ${fastest.name}`);
  for (const [side, target] of [
    [ourGraphql, TARGET_GRAPHQL_RATIO],
    [ourRest, TARGET_REST_RATIO],
  ] as const) {
    const perRound = rps(side).map((value, i) => value / rps(fastest)[i]!);
    const ratio = median(perRound);
    const clean = runs.get(side)!.every(allAnswered2xx);
    const mark = bench.mark(clean, ratio >= target);
    for (const other of peers.filter((p) => p !== fastest)) {
      const against = median(rps(side).map((value, i) => value / rps(other)[i]!));
      console.log(`     ${side.name} / ${other.name}: ${against.toFixed(2)}x (for information)`);
    }
    console.log(
      `${mark} ${side.name} / ${fastest.name}: ${ratio.toFixed(2)}x` +
        ` (rounds ${perRound.map((r) => r.toFixed(2)).join(', ')}; target >= ${target.toFixed(1)}x)` +
        (clean ? '' : ', with errors or non-2xx answers, or none answered'),
    );
  }
  const peerProblems = peers.some((side) => runs.get(side)!.some((r) => r.errors + r.non2xx > 0));
  if (peerProblems) console.log('WARNING PostGraphile answered errors or non-2xx during a run');
  return 'read-peer';
}

runBench(main);
