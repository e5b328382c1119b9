import { accountsByIds } from '../../adapters/postgres/accounts.repository.js';
import type { Db } from '../../adapters/postgres/db.js';
import { createPostReadStore } from '../../adapters/postgres/post-reads.repository.js';
import type { Account } from '../../domain/accounts/account.js';

/*
 * Batch reads the GraphQL per-request DataLoaders call once per batch (src/api/graphql/schema/
 * post-loaders.ts): each is one statement however many posts the page holds, so a page's cost
 * stays constant. They read through `deps.db` so the statement-counting test sees them.
 */

/** The accounts among `ids` (post authors), keyed by id. */
export function loadAccounts(deps: { db: Db }, ids: readonly string[]): Promise<Map<string, Account>> {
  return accountsByIds(deps.db, ids);
}

/** Which of `postIds` the account has liked. */
export function likedPostIds(
  deps: { db: Db },
  accountId: string,
  postIds: readonly string[],
): Promise<Set<string>> {
  return createPostReadStore(deps.db).likedBy(accountId, postIds);
}
