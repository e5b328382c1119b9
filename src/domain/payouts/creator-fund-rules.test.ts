import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  ENGAGEMENT_WEIGHTS,
  ENGAGER_CAP_POINTS,
  endedEpochs,
  epochContaining,
  epochStartingAt,
  formatNative,
  likers,
  likesFromPayingEngagers,
  scoreAuthors,
  splitBudget,
  type EngagementCounts,
} from './creator-fund-rules.js';

const counts = (
  authorId: string,
  engagerId: string,
  c: Partial<EngagementCounts> = {},
): EngagementCounts => ({
  authorId,
  engagerId,
  likes: 0,
  replies: 0,
  quotes: 0,
  reposts: 0,
  ...c,
});

describe('likesFromPayingEngagers', () => {
  test('likes of engagers who never paid count nothing; their paid engagement and paying likers count', () => {
    const rows = [
      counts('a', 'sybil1', { likes: 10 }),
      counts('a', 'sybil2', { likes: 3, replies: 1 }),
      counts('a', 'fan', { likes: 2 }),
      counts('b', 'sybil1', { likes: 1 }),
    ];
    expect(likers(rows)).toEqual(['fan', 'sybil1', 'sybil2']);
    const kept = likesFromPayingEngagers(rows, new Set(['fan']));
    expect(kept).toEqual([
      counts('a', 'sybil1'),
      counts('a', 'sybil2', { replies: 1 }),
      counts('a', 'fan', { likes: 2 }),
      counts('b', 'sybil1'),
    ]);
    // The reply itself was paid: sybil2's 3 points stand, sybil1 gives nothing to anyone.
    expect(scoreAuthors(kept)).toEqual([{ authorId: 'a', score: 2n + 3n }]);
    expect(rows[0]!.likes).toBe(10); // the input is not modified
  });
});

describe('scoreAuthors', () => {
  test('weighs likes, replies, quotes and reposts by the documented weights', () => {
    const [score] = scoreAuthors([
      counts('a', 'x', { likes: 1, replies: 1 }),
      counts('a', 'y', { quotes: 1 }),
    ]);
    expect(ENGAGEMENT_WEIGHTS).toEqual({ like: 1n, reply: 3n, quote: 4n, repost: 2n });
    expect(score).toEqual({ authorId: 'a', score: 1n + 3n + 4n });
  });

  test('ignores engagement with one’s own posts', () => {
    expect(scoreAuthors([counts('a', 'a', { likes: 5, replies: 5, quotes: 5, reposts: 1 })])).toEqual([]);
    expect(scoreAuthors([counts('a', 'a', { replies: 9 }), counts('a', 'b', { likes: 1 })])).toEqual([
      { authorId: 'a', score: 1n },
    ]);
  });

  test('caps each engager’s points per author, across several rows (posts) of the same pair', () => {
    const rows = [
      counts('a', 'farm', { replies: 3 }), // 9
      counts('a', 'farm', { replies: 3, likes: 40 }), // another post: 49
      counts('a', 'fan', { likes: 2 }),
      counts('b', 'farm', { likes: 1 }), // the cap is per author: b counts on its own
    ];
    expect(scoreAuthors(rows)).toEqual([
      { authorId: 'a', score: ENGAGER_CAP_POINTS + 2n },
      { authorId: 'b', score: 1n },
    ]);
  });

  test('no author ever gets more than the cap times the number of distinct engagers', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            authorId: fc.constantFrom('a', 'b', 'c'),
            engagerId: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
            likes: fc.nat(50),
            replies: fc.nat(50),
            quotes: fc.nat(50),
            reposts: fc.nat(1),
          }),
        ),
        (rows) => {
          for (const { authorId, score } of scoreAuthors(rows)) {
            const engagers = new Set(
              rows.filter((r) => r.authorId === authorId && r.engagerId !== authorId).map((r) => r.engagerId),
            );
            expect(score).toBeLessThanOrEqual(ENGAGER_CAP_POINTS * BigInt(engagers.size));
          }
        },
      ),
    );
  });
});

describe('splitBudget', () => {
  test('splits in proportion to the scores', () => {
    expect(
      splitBudget(1_000n, [
        { authorId: 'a', score: 3n },
        { authorId: 'b', score: 1n },
      ]),
    ).toEqual([
      { authorId: 'a', score: 3n, amount: 750n },
      { authorId: 'b', score: 1n, amount: 250n },
    ]);
  });

  test('hands the division’s remainder out one unit each by largest remainder, then id: deterministic', () => {
    const scores = [
      { authorId: 'c', score: 1n },
      { authorId: 'a', score: 1n },
      { authorId: 'b', score: 1n },
    ];
    // 10 / 3: 3 each, one unit left; equal remainders and scores: the lowest id gets it.
    expect(splitBudget(10n, scores).map((s) => [s.authorId, s.amount])).toEqual([
      ['a', 4n],
      ['b', 3n],
      ['c', 3n],
    ]);
    expect(splitBudget(10n, [...scores].reverse())).toEqual(splitBudget(10n, scores));
    // 100 split 2:1 → 66.67 / 33.33: the larger remainder (a's .67) takes the unit.
    expect(
      splitBudget(100n, [
        { authorId: 'z', score: 2n },
        { authorId: 'y', score: 1n },
      ]).map((s) => [s.authorId, s.amount]),
    ).toEqual([
      ['y', 33n],
      ['z', 67n],
    ]);
  });

  test('leaves out authors whose share is zero and still pays the whole total', () => {
    const scores = ['a', 'b', 'c', 'd'].map((authorId) => ({ authorId, score: 1n }));
    const shares = splitBudget(2n, scores);
    expect(shares.map((s) => [s.authorId, s.amount])).toEqual([
      ['a', 1n],
      ['b', 1n],
    ]);
  });

  test('pays nothing from an empty budget or to nobody', () => {
    expect(splitBudget(0n, [{ authorId: 'a', score: 5n }])).toEqual([]);
    expect(splitBudget(1_000n, [])).toEqual([]);
  });

  test('always sums exactly to the total, every share positive, no author beyond its proportion + 1', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 20n }),
        fc.uniqueArray(fc.record({ authorId: fc.uuid(), score: fc.bigInt({ min: 1n, max: 10n ** 6n }) }), {
          selector: (s) => s.authorId,
          maxLength: 60,
        }),
        (total, scores) => {
          const shares = splitBudget(total, scores);
          const sum = scores.reduce((acc, s) => acc + s.score, 0n);
          expect(shares.reduce((acc, s) => acc + s.amount, 0n)).toBe(sum === 0n ? 0n : total);
          for (const share of shares) {
            expect(share.amount).toBeGreaterThan(0n);
            expect(share.amount).toBeLessThanOrEqual((total * share.score) / sum + 1n);
          }
        },
      ),
    );
  });
});

describe('epochs', () => {
  const HOUR = 3_600_000;
  test('are aligned windows of the configured length', () => {
    expect(epochContaining(new Date('2026-11-22T07:59:59.999Z'), HOUR)).toEqual({
      start: new Date('2026-11-22T07:00:00.000Z'),
      end: new Date('2026-11-22T08:00:00.000Z'),
    });
    expect(epochStartingAt(new Date('2026-11-22T07:00:00Z'), HOUR).end).toEqual(
      new Date('2026-11-22T08:00:00Z'),
    );
    expect(() => epochStartingAt(new Date('2026-11-22T07:30:00Z'), HOUR)).toThrow(/multiple of 3600000/);
  });

  test('endedEpochs lists the last ones that ended, oldest first', () => {
    const ended = endedEpochs(new Date('2026-11-22T07:10:00Z'), HOUR, 2);
    expect(ended.map((e) => e.start.toISOString())).toEqual([
      '2026-11-22T05:00:00.000Z',
      '2026-11-22T06:00:00.000Z',
    ]);
  });

  test('formatNative prints base units as tokens without floats', () => {
    expect(formatNative(1_500_000_000n)).toBe('1.5');
    expect(formatNative(1n)).toBe('0.000000001');
    expect(formatNative(10_000_000n * 10n ** 9n)).toBe('10000000');
  });
});
