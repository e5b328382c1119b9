/** How the creator reads' `from` and `to` are written (parseInstant). */
const INSTANT = 'An ISO 8601 instant (2026-11-01T00:00:00Z, or with an offset), or YYYY-MM-DD[THH:mm[:ss]]';

/**
 * The `from` and `to` query properties of a read over [from, to): one wording for every route
 * that takes a range (earnings, posts' earnings, audience). `to` says the route's bound; `readIn`
 * where a date without an offset is read (`UTC`, or `timezone` when the route takes one).
 */
export function rangeBounds(options: { to: string; readIn: 'UTC' | 'timezone' }) {
  const written = `${INSTANT} read in ${options.readIn}`;
  return {
    from: { type: 'string', description: `Range start (included). ${written}` },
    to: {
      type: 'string',
      description: `Range end (excluded; may be later than now), ${options.to}. ${written}`,
    },
  } as const;
}
