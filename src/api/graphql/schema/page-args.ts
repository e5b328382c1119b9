import { parsePageLimit } from '../../../app/feed/post-reads.js';
import { AppError } from '../../../domain/errors.js';

/** Relay paging arguments as Pothos hands them to a connection resolver. */
export interface ConnectionArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

/**
 * The read services' `{limit, cursor}` from Relay arguments. Forward only (keyset pages); `first`
 * follows the REST `limit` rule (1 to 50, default 20) but is named `first` in the error, and an
 * empty `after` is refused rather than read as "no cursor" (edges without a cursor carry "").
 */
export function pageInput(args: ConnectionArgs): { limit: number; cursor: string | undefined } {
  if (args.last != null || args.before != null)
    throw new AppError('invalid_request', 'This list pages forward only: use first and after');
  if (args.after === '')
    throw new AppError('invalid_request', 'after must be a pageInfo.endCursor from a previous page', {
      field: 'after',
    });
  return { limit: parsePageLimit(args.first, 'first'), cursor: args.after ?? undefined };
}

/**
 * Runs a read service with a cursor from `after`: its cursor errors name `cursor`, the REST
 * parameter; here the argument is `after`. Codes are kept (BAD_USER_INPUT, CURSOR_EXPIRED).
 */
export async function withAfterArgument<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof AppError && error.details.field === 'cursor') {
      throw new AppError(error.code, error.message.replace(/^cursor\b/, 'after'), {
        ...error.details,
        field: 'after',
      });
    }
    throw error;
  }
}

/**
 * A connection's pageInfo from a keyset page: `endCursor` is the page's next cursor (REST's
 * `next_cursor`), null on the last page; `startCursor` the first edge's, when it has one.
 */
export function pageInfoOf(
  page: { hasMore: boolean; nextCursor?: string },
  edges: Array<{ readonly cursor: string }>,
) {
  return {
    hasNextPage: page.hasMore,
    // Keyset pages cannot tell cheaply whether anything is newer than `after` (Relay allows false).
    hasPreviousPage: false,
    // A getter: an edge's cursor may be computed on demand (lazyEdge).
    get startCursor() {
      return edges[0]?.cursor || null;
    },
    endCursor: page.nextCursor ?? null,
  };
}

/**
 * An edge whose cursor is computed when a query selects it (or `pageInfo.startCursor`), once: a
 * signed cursor costs an HMAC, and most feed queries select none.
 */
export function lazyEdge<T>(node: T, cursorOf: () => string): { node: T; readonly cursor: string } {
  let cursor: string | undefined;
  return {
    node,
    get cursor() {
      return (cursor ??= cursorOf());
    },
  };
}

/**
 * Edge cursors where a service returns only the page's next cursor: the last edge carries it,
 * the others "" (refused as `after`). Clients page with `pageInfo.endCursor`.
 */
export function lastEdgeCursor(index: number, length: number, nextCursor: string | undefined): string {
  return index === length - 1 ? (nextCursor ?? '') : '';
}
