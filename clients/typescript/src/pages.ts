/** One page of a cursor-paginated list, as every list of the API has it. */
export interface Page<T> {
  items: readonly T[];
  /** The cursor of the next page; null or absent at the end. */
  next: string | null | undefined;
  hasMore: boolean;
}

/**
 * Every item of a cursor-paginated list, page after page, fetched as the caller consumes them
 * (a `break` stops fetching). The server's cursors are positions, not offsets: items added while
 * it runs do not shift the pages, so each item is visited once.
 */
export async function* eachItem<T>(
  fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
): AsyncGenerator<T> {
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(cursor);
    yield* page.items;
    if (!page.hasMore || !page.next) return;
    cursor = page.next;
  }
}

/** A Relay connection's page (GraphQL lists: followers, reconciliation exceptions). */
export interface Connection<T> {
  edges: ReadonlyArray<{ node: T }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export function connectionPage<T>(connection: Connection<T>): Page<T> {
  return {
    items: connection.edges.map((edge) => edge.node),
    next: connection.pageInfo.endCursor,
    hasMore: connection.pageInfo.hasNextPage,
  };
}
