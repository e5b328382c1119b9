import { graphqlRequest, type Target } from './http-load.js';

/** A feed route the read benches measure, and whether its target is GraphQL's or REST's. */
export interface FeedRoute extends Target {
  name: string;
  graphql: boolean;
}

/**
 * The three routes of the read-path issue's targets (bench:feed, bench:read-under-writes): REST
 * latest and trending, 20 items, and the GraphQL feed query, each as the `key`'s holder reads it.
 */
export function feedRoutes(base: string, key: string): FeedRoute[] {
  const auth = { authorization: `Bearer ${key}` };
  const query =
    '{ feed(sort: LATEST, first: 20) { edges { node { id content type likeCount replyCount repostCount createdAt author { handle displayName } } } pageInfo { endCursor hasNextPage } } }';
  return [
    {
      name: 'REST /feed?sort=latest',
      url: `${base}/api/v1/feed?sort=latest&limit=20`,
      options: { headers: auth },
      graphql: false,
    },
    {
      name: 'REST /feed?sort=trending',
      url: `${base}/api/v1/feed?sort=trending&limit=20`,
      options: { headers: auth },
      graphql: false,
    },
    {
      name: 'GraphQL feed(LATEST, 20)',
      url: `${base}/graphql`,
      options: graphqlRequest(query, auth),
      graphql: true,
    },
  ];
}
