import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import type { RunningService } from '../src/service.js';
import { intSetting } from './bench-settings.js';
import { fundedMembers } from './funded-accounts.js';
import { startWriter, type WriteRates, type Writer } from './read-writer.js';

/** Each poster starts with $500: a full read-under-writes run spends under $100 of it. */
const FUNDING_MICRO = 500_000_000n;

/**
 * The writer child of the benches that pay posts and like them through the API (read-under-writes,
 * write-cost, write-step): `posters` accounts funded on chain, `likers` accounts with an engage key
 * (handles `<tag>_l<n>`), likes aimed at the 50 newest posts of the seed.
 */
export async function startFundedWriter(
  service: RunningService,
  options: { posters: number; likers: number; tag: string },
): Promise<Writer> {
  const { app } = service;
  const posters = await fundedMembers(service, options.posters, FUNDING_MICRO);
  const likerKeys: string[] = [];
  for (let i = 0; i < options.likers; i++) {
    const liker = await createAccount(app, { handle: `${options.tag}_l${i}` });
    likerKeys.push((await createApiKey(app.apiKeys, liker.id, ['engage'])).key);
  }
  const { rows: newest } = await sql<{ id: string }>`
    SELECT id FROM posts ORDER BY created_at DESC, id DESC LIMIT 50`.execute(app.db);
  return startWriter({
    base: service.apiUrl!,
    posterKeys: posters.map((p) => p.key),
    likerKeys,
    recentPostIds: newest.map((r) => r.id),
  });
}

/**
 * The two write levels the issue names: BENCH_LOW_* (20 + 100) and BENCH_HIGH_* (100 + 300). A smoke
 * run writes 2 + 5 and nothing at the high level (read-under-writes skips a level of 0 + 0): it runs
 * the same code as the low one, and time is what a smoke run must not spend.
 */
export function writeLevels(): { low: WriteRates; high: WriteRates } {
  return {
    low: {
      postsPerSecond: intSetting('BENCH_LOW_POSTS', 20, 0, 2),
      likesPerSecond: intSetting('BENCH_LOW_LIKES', 100, 0, 5),
    },
    high: {
      postsPerSecond: intSetting('BENCH_HIGH_POSTS', 100, 0, 0),
      likesPerSecond: intSetting('BENCH_HIGH_LIKES', 300, 0, 0),
    },
  };
}

/** Outbox rows not yet sent or confirmed (the payments backlog). */
async function unfinishedPayments(service: RunningService): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM chain_transactions WHERE status IN ('signed', 'sent')`.execute(
    service.app.db,
  );
  return rows[0]!.n;
}

/** Waits (at most a minute) until the payments backlog is gone; the seconds it took and what is left. */
export async function settlePayments(service: RunningService): Promise<{ seconds: number; left: number }> {
  const started = performance.now();
  let left = await unfinishedPayments(service);
  while (left > 0 && performance.now() - started < 60_000) {
    await sleep(100);
    left = await unfinishedPayments(service);
  }
  return { seconds: (performance.now() - started) / 1000, left };
}
