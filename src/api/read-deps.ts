import type { ApiDeps } from '../app/api-deps.js';

const readDeps = new WeakMap<ApiDeps, ApiDeps>();

/**
 * `deps` with the read path's own pool as its `db` (ApiDeps.readDb): what the feed, post and
 * timeline reads run on, REST routes and GraphQL resolvers alike, so that they never wait behind
 * the write path's queue. Made once per deps object; called only while serving a request (the
 * OpenAPI printer's deps refuse use).
 */
export function readDepsOf(deps: ApiDeps): ApiDeps {
  let reads = readDeps.get(deps);
  if (!reads) {
    reads = { ...deps, db: deps.readDb };
    readDeps.set(deps, reads);
  }
  return reads;
}
