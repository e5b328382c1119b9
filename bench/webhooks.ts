/**
 * Benchmark of webhook delivery (issue 39): `npm run bench:webhooks`.
 *
 * The real service runs in this process (roles api + worker, embedded stack, as `npm start`); a
 * receiver answers 204 in a child process of its own (bench/webhook-receiver.ts); the writer pays
 * posts and likes them through the API from another child (bench/read-writer.ts).
 *
 *   setup: BENCH_ENDPOINTS endpoints (100), 5 per account (the most an account may have) over
 *          BENCH_ENDPOINTS / 5 funded accounts, each registered through POST /api/v1/webhooks, every
 *          event type, URL http://127.0.0.1:<receiver>/hook/<n>.
 *   1. live: those accounts pay BENCH_POSTS posts/s (20) between them while BENCH_LIKERS accounts
 *      like their newest posts at BENCH_LIKES/s (100), for BENCH_SECONDS (20); then until every
 *      payment is finalized and every endpoint has received its whole log. Figure: the p99 from an
 *      event's `created_at` (its change's commit) to the receiver's 2xx, target < 1 s.
 *   2. backlog: the endpoints are paused, BENCH_BACKLOG events (50,000 deliveries: 500 per endpoint)
 *      are staged for their accounts and numbered, then every endpoint is enabled through the API.
 *      Figure: deliveries/s from the first enable to the last receipt, target >= 1,000.
 * Checks (exit 1 when broken): every write answered 2xx, no endpoint received out of order, every
 * endpoint caught up with its account's log.
 */
import { sql } from 'kysely';
import type { RunningService } from '../src/service.js';
import { intSetting } from './bench-settings.js';
import {
  POSTER_FUNDING_MICRO,
  settlePayments,
  startFundedWriter,
  writeFor,
  writeProblems,
} from './bench-writer.js';
import { pollUntil } from './clock.js';
import { fundedMembers } from './funded-accounts.js';
import { runBench } from './runner.js';
import { percentile } from './stats.js';
import { ENDPOINTS_PER_ACCOUNT, registerEndpoints } from './webhook-endpoints.js';
import { startReceiver } from './webhook-receiver.js';

const TARGET_P99_MS = 1_000;
const TARGET_DRAIN_PER_SECOND = 1_000;

runBench(async (bench) => {
  const settings = {
    endpoints: intSetting('BENCH_ENDPOINTS', 100, 1, 10),
    postsPerSecond: intSetting('BENCH_POSTS', 20, 1, 2),
    likesPerSecond: intSetting('BENCH_LIKES', 100, 0, 5),
    likers: intSetting('BENCH_LIKERS', 100, 1, 5),
    seconds: intSetting('BENCH_SECONDS', 20, 1, 3),
    backlog: intSetting('BENCH_BACKLOG', 50_000, 1, 500),
  };
  const service = await bench.startService(['api', 'worker']);
  const receiver = await startReceiver();
  bench.defer(() => receiver.close());
  const base = service.apiUrl!;
  const accounts = Math.ceil(settings.endpoints / ENDPOINTS_PER_ACCOUNT);
  console.log(
    `webhooks bench: ${settings.endpoints} endpoints over ${accounts} accounts; ` +
      `${settings.postsPerSecond} paid posts/s + ${settings.likesPerSecond} likes/s for ${settings.seconds} s; ` +
      `then a backlog of ${settings.backlog} deliveries`,
  );
  const owners = await fundedMembers(service, accounts, POSTER_FUNDING_MICRO);
  const endpointIds = await registerEndpoints(
    base,
    owners.map((o) => o.key),
    settings.endpoints,
    receiver.port,
  );

  // One post per owner before the clock, so the first likes have posts to go to.
  await Promise.all(owners.map((owner) => firstPost(base, owner.key)));

  // 1. live
  const writer = await startFundedWriter(service, { posters: owners, likers: settings.likers, tag: 'whl' });
  const since = Date.now();
  bench.defer(writer.close); // on a throw; closed below once the live part is written
  const { postsPerSecond, likesPerSecond } = settings;
  const writes = await writeFor(writer, { postsPerSecond, likesPerSecond }, settings.seconds);
  await writer.close();
  writeProblems('live', writes).forEach(bench.problem);
  const settled = await settlePayments(service);
  if (settled.left > 0) bench.problem(`${settled.left} payment(s) not settled a minute after the load`);
  const caughtUp = await untilCaughtUp(service, 180_000);
  if (!caughtUp.done)
    bench.problem(`live: ${caughtUp.behind} endpoint(s) still behind their log after 3 min`);
  const live = await receiver.report(since);
  const sorted = [...live.latenciesMs].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p99 = percentile(sorted, 99);
  const p99Met = sorted.length > 0 && p99 < TARGET_P99_MS;
  console.log(
    `live: ${writes.posts.ok} paid posts, ${writes.likes.ok} likes; ${live.received} deliveries ` +
      `(${live.duplicates} duplicates), commit to 2xx p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms`,
  );

  // 2. backlog
  await sql`UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'paused by the bench'`.execute(
    service.app.db,
  );
  const perAccount = Math.ceil(settings.backlog / settings.endpoints);
  await sql`
    INSERT INTO event_staging (account_id, type, data)
    SELECT a, 'post.liked', jsonb_build_object('post_id', gen_random_uuid(), 'by', 'bench')
      FROM unnest(${owners.map((o) => o.account.id)}::uuid[]) AS a, generate_series(1, ${perAccount})`.execute(
    service.app.db,
  );
  await untilStagedNumbered(service);
  const expected = perAccount * settings.endpoints;
  const before = (await receiver.report(Number.MAX_SAFE_INTEGER)).received;
  const drainStart = Date.now();
  await Promise.all(
    endpointIds.map(async ({ id, key }) => {
      const response = await fetch(`${base}/api/v1/webhooks/${id}/enable`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
      });
      if (!response.ok) bench.problem(`enable ${id}: ${response.status} ${await response.text()}`);
    }),
  );
  const { value: drained } = await pollUntil(
    () => receiver.report(Number.MAX_SAFE_INTEGER),
    (report) => report.received - before >= expected,
    { everyMs: 250, limitMs: 300_000 },
  );
  const delivered = drained.received - before;
  if (delivered < expected) bench.problem(`backlog: ${delivered} of ${expected} delivered within 5 min`);
  const drainSeconds = Math.max(0.001, (drained.lastAt - drainStart) / 1000);
  const perSecond = delivered / drainSeconds;
  const drainMet = perSecond >= TARGET_DRAIN_PER_SECOND;
  console.log(
    `backlog: ${delivered} deliveries in ${drainSeconds.toFixed(1)} s = ${perSecond.toFixed(0)} deliveries/s`,
  );
  if (drained.outOfOrder.length > 0) bench.problem(`out of order at ${drained.outOfOrder.join(', ')}`);
  const final = await untilCaughtUp(service, 60_000);
  if (!final.done) bench.problem(`backlog: ${final.behind} endpoint(s) behind their log`);

  console.log(
    `${bench.target(p99Met)} commit to receiver 2xx p99 ${p99.toFixed(0)} ms (target < ${TARGET_P99_MS} ms)`,
  );
  console.log(
    `${bench.target(drainMet)} backlog drain ${perSecond.toFixed(0)} deliveries/s (target >= ${TARGET_DRAIN_PER_SECOND})`,
  );
  return 'webhooks';
});

async function firstPost(base: string, key: string): Promise<void> {
  const response = await fetch(`${base}/api/v1/posts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'post', content: 'webhooks bench: first post' }),
  });
  if (response.status !== 201 && response.status !== 202) {
    throw new Error(`first post: ${response.status} ${await response.text()}`);
  }
}

/** Waits until no payment is short of finalized, nothing is staged and every endpoint is at its log's head. */
async function untilCaughtUp(
  service: RunningService,
  ms: number,
): Promise<{ done: boolean; behind: number }> {
  const { value, held } = await pollUntil(
    async () =>
      (
        await sql<{ behind: number; unfinished: number; staged: number }>`
      SELECT (SELECT count(*)::int FROM webhook_endpoints w
                JOIN account_event_heads h ON h.account_id = w.account_id
               WHERE w.delivered_through < h.last_sequence) AS behind,
             (SELECT count(*)::int FROM chain_transactions WHERE status NOT IN ('finalized', 'failed')) AS unfinished,
             (SELECT count(*)::int FROM event_staging) AS staged`.execute(service.app.db)
      ).rows[0]!,
    (row) => row.behind === 0 && row.unfinished === 0 && row.staged === 0,
    { everyMs: 100, limitMs: ms },
  );
  return { done: held, behind: held ? 0 : value.behind };
}

async function untilStagedNumbered(service: RunningService): Promise<void> {
  const staged = async () =>
    (await sql<{ n: number }>`SELECT count(*)::int AS n FROM event_staging`.execute(service.app.db)).rows[0]!
      .n;
  await pollUntil(staged, (n) => n === 0, { everyMs: 100 });
}
