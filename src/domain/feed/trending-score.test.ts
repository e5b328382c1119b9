import { describe, expect, test } from 'vitest';
import { trendingScore } from './trending-score.js';

const none = { likes: 0, replies: 0, quotes: 0, reposts: 0 };

describe('trendingScore', () => {
  test('fresher ranks higher at equal engagement; more engagement ranks higher at equal age', () => {
    expect(trendingScore(none, 1)).toBeGreaterThan(trendingScore(none, 5));
    expect(trendingScore({ ...none, likes: 3 }, 5)).toBeGreaterThan(trendingScore(none, 5));
  });

  test('paid engagement outweighs free: a reply beats two likes, a quote beats a reply', () => {
    expect(trendingScore({ ...none, replies: 1 }, 3)).toBeGreaterThan(
      trendingScore({ ...none, likes: 2 }, 3),
    );
    expect(trendingScore({ ...none, quotes: 1 }, 3)).toBeGreaterThan(
      trendingScore({ ...none, replies: 1 }, 3),
    );
  });

  test('the documented formula, to the digit', () => {
    // (1 + 2 + 3 + 4 + 2) / (4 + 2)^1.5
    expect(trendingScore({ likes: 2, replies: 1, quotes: 1, reposts: 1 }, 4)).toBeCloseTo(
      12 / Math.pow(6, 1.5),
      12,
    );
  });
});
