/**
 * The creator fund's rules: how engagement becomes a score, how an epoch's budget is split among
 * authors, and which epoch an instant belongs to. Pure: the engagement counts come from ClickHouse
 * (src/app/creator-fund), the money moves through the ledger and the outbox.
 *
 * Amounts are bigint native-token base units (9 decimals), never floats.
 */

/**
 * Points per engagement received. Paid engagement (a reply, quote or repost costs the engager $1)
 * weighs more than a free like, and a quote (new content pointing at the post) more than a reply
 * or a repost: the same ordering as the trending score (src/domain/feed/trending-score.ts).
 */
export const ENGAGEMENT_WEIGHTS = { like: 1n, reply: 3n, quote: 4n, repost: 2n } as const;

/**
 * Most points one engager can give one author in one epoch. A single account (or a sybil farm of
 * them) liking and replying to every post of a friend adds at most this much to the friend's
 * score per engager: ten likes, or three replies and a like, or two quotes and a repost. Real
 * reach (many distinct engagers) is what moves a score.
 */
export const ENGAGER_CAP_POINTS = 10n;

/** What one engager did to one author's posts in one epoch (counts as ClickHouse reports them). */
export interface EngagementCounts {
  authorId: string;
  engagerId: string;
  /**
   * Likes that count: a like counts in the epoch where it stands at the epoch's end and only if the
   * engager never liked that post before (see docs/money.md: unlikes cancel likes).
   */
  likes: number;
  replies: number;
  quotes: number;
  reposts: number;
}

/**
 * Likes count only from engagers who have paid for something: at least one post, reply, quote or
 * repost committed before the epoch's end and settled on chain (src/app/creator-fund finds them).
 * A like is free and so is a sign-up, so without this a farm of fresh accounts would take the
 * budget: each sybil adds up to ENGAGER_CAP_POINTS per farm author per epoch. Now each one costs at
 * least the cheapest paid action ($1; $0.50 net when it is a reply to another farm account's post,
 * whose author gets the other half), once. Sends and swaps do not qualify: a send between farm
 * accounts costs nothing net, and a swap only exchanges. Replies, quotes and reposts pass as they
 * are: each one is itself a settled paid action (a failed one is dropped before scoring).
 *
 * Returns the rows with `likes` set to 0 where the engager is not in `payingEngagers`.
 */
export function likesFromPayingEngagers(
  rows: readonly EngagementCounts[],
  payingEngagers: ReadonlySet<string>,
): EngagementCounts[] {
  return rows.map((row) =>
    row.likes === 0 || payingEngagers.has(row.engagerId) ? row : { ...row, likes: 0 },
  );
}

/** The engagers whose likes need a paying check: those with a like among `rows`. */
export function likers(rows: readonly EngagementCounts[]): string[] {
  return [...new Set(rows.filter((row) => row.likes > 0).map((row) => row.engagerId))].sort(compareIds);
}

export interface AuthorScore {
  authorId: string;
  /** Capped points summed over the author's distinct engagers. */
  score: bigint;
}

/**
 * Scores per author: each engager's weighted engagement with the author, capped at
 * ENGAGER_CAP_POINTS, summed over engagers. Engagement with one's own posts is ignored (it would
 * let anyone pay themselves). Authors with no points are left out. Sorted by author id, so the
 * result does not depend on the order the rows came in.
 */
export function scoreAuthors(rows: readonly EngagementCounts[]): AuthorScore[] {
  const perPair = new Map<string, { authorId: string; points: bigint }>();
  for (const row of rows) {
    if (row.authorId === row.engagerId) continue;
    const points =
      BigInt(Math.max(0, row.likes)) * ENGAGEMENT_WEIGHTS.like +
      BigInt(Math.max(0, row.replies)) * ENGAGEMENT_WEIGHTS.reply +
      BigInt(Math.max(0, row.quotes)) * ENGAGEMENT_WEIGHTS.quote +
      BigInt(Math.max(0, row.reposts)) * ENGAGEMENT_WEIGHTS.repost;
    // The same pair may come in several rows (one per post): the cap applies to their sum.
    const key = `${row.authorId}\u0000${row.engagerId}`;
    const pair = perPair.get(key) ?? { authorId: row.authorId, points: 0n };
    pair.points += points;
    perPair.set(key, pair);
  }
  const perAuthor = new Map<string, bigint>();
  for (const { authorId, points } of perPair.values()) {
    const capped = points < ENGAGER_CAP_POINTS ? points : ENGAGER_CAP_POINTS;
    perAuthor.set(authorId, (perAuthor.get(authorId) ?? 0n) + capped);
  }
  return [...perAuthor]
    .filter(([, score]) => score > 0n)
    .map(([authorId, score]) => ({ authorId, score }))
    .sort((a, b) => compareIds(a.authorId, b.authorId));
}

export interface AuthorShare {
  authorId: string;
  score: bigint;
  /** Native base units, > 0. */
  amount: bigint;
}

/**
 * Splits `total` base units among the authors in proportion to their scores, paying exactly
 * `total` (largest-remainder method). Each author first gets floor(total · score / sum); the
 * units left over (fewer than the number of authors) go one each to the authors with the largest
 * remainders of that division, ties broken by the higher score, then by the lower author id, so
 * the same scores always split the same way. Authors whose share is 0 (a budget smaller than the
 * number of authors) are left out; the shares of the others still sum to `total`.
 */
export function splitBudget(total: bigint, scores: readonly AuthorScore[]): AuthorShare[] {
  if (total < 0n) throw new RangeError(`a budget cannot be negative: ${total}`);
  const positive = scores.filter((s) => s.score > 0n);
  const sum = positive.reduce((acc, s) => acc + s.score, 0n);
  if (total === 0n || sum === 0n) return [];
  const shares = positive.map((s) => ({
    authorId: s.authorId,
    score: s.score,
    amount: (total * s.score) / sum,
    remainder: (total * s.score) % sum,
  }));
  let left = total - shares.reduce((acc, s) => acc + s.amount, 0n);
  const byRemainder = [...shares].sort(
    (a, b) =>
      compareBig(b.remainder, a.remainder) ||
      compareBig(b.score, a.score) ||
      compareIds(a.authorId, b.authorId),
  );
  for (const share of byRemainder) {
    if (left === 0n) break;
    share.amount += 1n;
    left -= 1n;
  }
  return shares
    .filter((s) => s.amount > 0n)
    .map(({ authorId, score, amount }) => ({ authorId, score, amount }))
    .sort((a, b) => compareIds(a.authorId, b.authorId));
}

export interface EpochWindow {
  /** Inclusive. */
  start: Date;
  /** Exclusive. */
  end: Date;
}

/**
 * Epochs are consecutive windows of `epochMs` aligned to the Unix epoch (with the default hour:
 * 07:00:00.000 to 08:00:00.000 UTC), so every process agrees on them without coordination.
 */
export function epochContaining(at: Date, epochMs: number): EpochWindow {
  const start = Math.floor(at.getTime() / epochMs) * epochMs;
  return { start: new Date(start), end: new Date(start + epochMs) };
}

/** The epoch starting at `start`; refuses a start that is not on an epoch boundary. */
export function epochStartingAt(start: Date, epochMs: number): EpochWindow {
  if (Number.isNaN(start.getTime()) || start.getTime() % epochMs !== 0) {
    throw new RangeError(
      `an epoch starts on a multiple of ${epochMs} ms since 1970-01-01T00:00:00Z; ${start.toISOString?.() ?? start} is not one`,
    );
  }
  return { start, end: new Date(start.getTime() + epochMs) };
}

/**
 * The last `count` epochs that have ended by `now`, oldest first: the scheduled run pays each one
 * not paid yet, so a worker that was down for a few epochs catches up.
 */
export function endedEpochs(now: Date, epochMs: number, count: number): EpochWindow[] {
  const current = epochContaining(now, epochMs).start.getTime();
  const epochs: EpochWindow[] = [];
  for (let k = count; k >= 1; k--) {
    const start = current - k * epochMs;
    epochs.push({ start: new Date(start), end: new Date(start + epochMs) });
  }
  return epochs;
}

/** Native base units as a decimal token amount ("1.5", "0.000000001"), for people and GraphQL. */
export function formatNative(baseUnits: bigint, decimals = 9): string {
  const unit = 10n ** BigInt(decimals);
  const sign = baseUnits < 0n ? '-' : '';
  const abs = baseUnits < 0n ? -baseUnits : baseUnits;
  const fraction = (abs % unit).toString().padStart(decimals, '0').replace(/0+$/, '');
  return `${sign}${abs / unit}${fraction ? `.${fraction}` : ''}`;
}

function compareBig(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
