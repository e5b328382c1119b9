import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { createAccount } from '../src/domain/accounts/accounts.service.js';
import { createApiKey } from '../src/domain/auth/api-keys.service.js';
import type { RunningService } from '../src/service.js';
import { intSetting } from './bench-settings.js';
import { pollUntil } from './clock.js';
import { fundedMembers, type Member } from './funded-accounts.js';
import { startWriter, type WriteRates, type Writer, type WriteResult } from './read-writer.js';

/** Each poster starts with $500: a full read-under-writes run spends under $100 of it ($1 a post). */
export const POSTER_FUNDING_MICRO = 500_000_000n;

/**
 * The writer child of the benches that pay posts and like them through the API (read-under-writes,
 * write-cost, write-step, webhooks): `posters` accounts funded on chain (or those given), `likers` accounts with an engage key
 * (handles `<tag>_l<n>`), likes aimed at the 50 newest posts of the seed.
 */
export async function startFundedWriter(
  service: RunningService,
  options: { posters: number | readonly Member[]; likers: number; tag: string },
): Promise<Writer> {
  const { app } = service;
  const posters =
    typeof options.posters === 'number'
      ? await fundedMembers(service, options.posters, POSTER_FUNDING_MICRO)
      : options.posters;
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

/** Waits (at most a minute) until the payments backlog is gone; the seconds it took and what is left. */
export async function settlePayments(service: RunningService): Promise<{ seconds: number; left: number }> {
  // Outbox rows not yet sent or confirmed.
  const unfinished = async () =>
    (
      await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM chain_transactions WHERE status IN ('signed', 'sent')`.execute(
        service.app.db,
      )
    ).rows[0]!.n;
  const { value: left, seconds } = await pollUntil(unfinished, (n) => n === 0, {
    everyMs: 100,
    limitMs: 60_000,
  });
  return { seconds, left };
}

/** Writes at `rates` for `seconds` (answers count from the start): the window's tally. */
export async function writeFor(writer: Writer, rates: WriteRates, seconds: number): Promise<WriteResult> {
  await writer.start(rates, 0);
  await sleep(seconds * 1000);
  return writer.stop();
}

/**
 * A write window's checks: every write answered 2xx, and at a rate above 0 some were written. Each
 * kind that failed is a problem, named by `label`, with its other outcomes.
 */
export function writeProblems(label: string, result: WriteResult): string[] {
  return (['posts', 'likes'] as const)
    .filter((kind) => {
      const { ok, sent } = result[kind];
      const rate = kind === 'posts' ? result.rates.postsPerSecond : result.rates.likesPerSecond;
      return ok !== sent || (rate > 0 && ok === 0);
    })
    .map(
      (kind) =>
        `${label}: ${result[kind].ok} of ${result[kind].sent} ${kind} answered 2xx` +
        result[kind].other.map(([outcome, n]) => `; ${n} x ${outcome}`).join(''),
    );
}
