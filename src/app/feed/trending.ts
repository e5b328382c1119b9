import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Db } from '../../adapters/postgres/db.js';
import { trendingCandidates } from '../../adapters/postgres/trending-candidates.repository.js';
import { AppError } from '../../domain/errors.js';
import { trendingScore } from '../../domain/feed/trending-score.js';
import { decodeSignedCursor, encodeSignedCursor } from '../../domain/pagination/signed-cursor.js';

/**
 * The trending feed: a ranked snapshot of recent posts, rebuilt every few seconds into a new
 * Redis sorted set under a new version number. A trending cursor holds (version, position), so a
 * client paging through reads one frozen ranking: no post repeats or goes missing while scores
 * move. Snapshots live TRENDING_SNAPSHOT_TTL_S; a cursor into an expired one is 410
 * `cursor_expired` (start again from the first page), never a page of another ranking.
 */

export interface TrendingDeps {
  db: Db;
  redis: Redis;
  /** Redis key prefix of this deployment (REDIS_PREFIX). */
  redisPrefix: string;
  cursorSecret: string;
}

export interface TrendingPage {
  /** Post ids in rank order. */
  postIds: string[];
  /** Each post's score in the snapshot the page came from. */
  scores: Map<string, number>;
  hasMore: boolean;
  nextCursor: string | undefined;
}

/** How long a snapshot can be paged through after it was built. */
export const TRENDING_SNAPSHOT_TTL_S = 15 * 60;
/** Posts older than this never trend (they cannot outscore fresh ones after gravity anyway). */
const CANDIDATE_DAYS = 7;
/** Ranked posts kept per snapshot: more than anyone pages through. */
const SNAPSHOT_SIZE = 5_000;
/** One builder at a time across processes; a build takes well under this. */
const BUILD_LOCK_MS = 10_000;

const keys = (prefix: string) => ({
  version: `${prefix}:trending:version`,
  current: `${prefix}:trending:current`,
  lock: `${prefix}:trending:build-lock`,
  snapshot: (version: number) => `${prefix}:trending:v${version}`,
});

/**
 * Builds a new snapshot and makes it current; returns its version, or undefined when another
 * process is building one right now.
 */
export async function buildTrendingSnapshot(deps: TrendingDeps): Promise<number | undefined> {
  const k = keys(deps.redisPrefix);
  const locked = await deps.redis.set(k.lock, String(process.pid), 'PX', BUILD_LOCK_MS, 'NX');
  if (locked !== 'OK') return undefined;
  try {
    const rows = await trendingCandidates(deps.db, CANDIDATE_DAYS);
    const ranked = rows
      .map((row) => ({ id: row.id, score: trendingScore(row, row.age_hours) }))
      .sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : -1))
      .slice(0, SNAPSHOT_SIZE);
    const version = await deps.redis.incr(k.version);
    const key = k.snapshot(version);
    const pipeline = deps.redis.multi();
    if (ranked.length > 0) pipeline.zadd(key, ...ranked.flatMap((r) => [r.score, r.id]));
    else pipeline.zadd(key, 0, EMPTY_MARKER); // an empty ranking is still a snapshot that exists
    pipeline.expire(key, TRENDING_SNAPSHOT_TTL_S);
    pipeline.set(k.current, String(version));
    await pipeline.exec();
    return version;
  } finally {
    await deps.redis.del(k.lock);
  }
}

/** Stands in an empty snapshot so that "no posts" and "expired" differ. */
const EMPTY_MARKER = '~empty';

/**
 * One page of the trending feed. Without a cursor: the current snapshot from the top (built on the
 * spot when none exists yet). With one: the same snapshot from where the previous page stopped.
 */
export async function trendingFeedPage(
  deps: TrendingDeps,
  request: { cursor?: string | undefined; limit: number },
): Promise<TrendingPage> {
  const k = keys(deps.redisPrefix);
  let version: number;
  let position: number;
  if (request.cursor) {
    [version, position] = decodeTrendingCursor(deps.cursorSecret, request.cursor);
  } else {
    version = await currentVersion(deps);
    position = 0;
  }
  const key = k.snapshot(version);
  // limit + 1 tells whether anything follows; the marker of an empty snapshot sorts last (score 0).
  const flat = await deps.redis.zrevrange(key, position, position + request.limit, 'WITHSCORES');
  if (flat.length === 0 && !(await deps.redis.exists(key))) {
    throw new AppError(
      'cursor_expired',
      'This trending ranking has expired (rankings are kept 15 minutes): start again from the first page, without a cursor',
      { field: 'cursor' },
    );
  }
  const entries: Array<{ id: string; score: number }> = [];
  for (let i = 0; i < flat.length; i += 2) {
    if (flat[i] !== EMPTY_MARKER) entries.push({ id: flat[i]!, score: Number(flat[i + 1]) });
  }
  const page = entries.slice(0, request.limit);
  const hasMore = entries.length > request.limit;
  return {
    postIds: page.map((e) => e.id),
    scores: new Map(page.map((e) => [e.id, e.score])),
    hasMore,
    nextCursor: hasMore
      ? encodeSignedCursor(deps.cursorSecret, CURSOR_SCOPE, [version, position + page.length])
      : undefined,
  };
}

/** The score a post has in the current snapshot (GraphQL `trendingScore`); null when not ranked. */
export async function currentTrendingScores(
  deps: TrendingDeps,
  postIds: readonly string[],
): Promise<Array<number | null>> {
  if (postIds.length === 0) return [];
  const version = await currentVersion(deps);
  const scores = await deps.redis.zmscore(keys(deps.redisPrefix).snapshot(version), ...postIds);
  return scores.map((score) => (score === null ? null : Number(score)));
}

const CURSOR_SCOPE = 'feed:trending';

function decodeTrendingCursor(secret: string, cursor: string): [number, number] {
  const [version, position, ...rest] = decodeSignedCursor(secret, CURSOR_SCOPE, cursor);
  if (!Number.isSafeInteger(version) || !Number.isSafeInteger(position) || rest.length > 0) {
    throw new AppError(
      'invalid_request',
      'cursor is not valid: pass a cursor from a previous page unchanged',
      {
        field: 'cursor',
      },
    );
  }
  if ((version as number) < 1 || (position as number) < 0) {
    throw new AppError(
      'invalid_request',
      'cursor is not valid: pass a cursor from a previous page unchanged',
      {
        field: 'cursor',
      },
    );
  }
  return [version as number, position as number];
}

/** The current snapshot's version, building the first one when there is none (or it expired). */
async function currentVersion(deps: TrendingDeps): Promise<number> {
  const k = keys(deps.redisPrefix);
  for (let attempt = 0; attempt < 50; attempt++) {
    const current = await deps.redis.get(k.current);
    if (current && (await deps.redis.exists(k.snapshot(Number(current))))) return Number(current);
    const built = await buildTrendingSnapshot(deps);
    if (built !== undefined) return built;
    await sleep(100); // another process is building it
  }
  throw new AppError('unavailable', 'The trending ranking is being built; try again in a moment');
}
