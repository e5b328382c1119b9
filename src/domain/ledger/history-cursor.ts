import { AppError } from '../errors.js';
import { decodeSignedCursor, encodeSignedCursor } from '../pagination/signed-cursor.js';

/**
 * Where a page of the transaction history stops: the movement's `created_at` exactly as Postgres
 * holds it (ISO 8601 UTC to the microsecond: a JavaScript Date keeps only milliseconds, which would
 * repeat or skip rows on the page boundary) and the movement id breaking ties.
 */
export interface HistoryPosition {
  createdAt: string;
  movementId: string;
}

/**
 * Default signing secret of history cursors. Cursors are not secrets and only page through the
 * caller's own history (the account comes from the API key, never from the cursor), so a constant
 * is enough to make tampering evident; a deployment may pass its own `cursorSecret` so nobody can
 * mint cursors. Changing the secret invalidates outstanding cursors (clients get 400 and restart).
 */
export const DEFAULT_CURSOR_SECRET = 'ledgerfeed:transaction-history-cursor:v1';

const EXACT_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * `<base64url JSON [createdAt, movementId]>.<base64url MAC>`, opaque to clients. The scope (the
 * account id) is signed but not carried: a cursor only works for its own account.
 */
export function encodeHistoryCursor(secret: string, scope: string, position: HistoryPosition): string {
  return encodeSignedCursor(secret, scope, [position.createdAt, position.movementId]);
}

/**
 * The position a cursor names. A garbled, forged or foreign cursor is AppError('invalid_request'),
 * never anything that reaches the database unchecked: even a correctly signed payload is validated,
 * since the default secret is public.
 */
export function decodeHistoryCursor(
  secret: string,
  scope: string,
  cursor: string,
  field = 'cursor',
): HistoryPosition {
  const values = decodeSignedCursor(secret, scope, cursor, field);
  const [createdAt, movementId] = values;
  if (
    values.length !== 2 ||
    typeof createdAt !== 'string' ||
    typeof movementId !== 'string' ||
    !UUID.test(movementId) ||
    !isExactInstant(createdAt)
  ) {
    throw new AppError(
      'invalid_request',
      `${field} is not valid: pass a cursor from a previous page unchanged`,
      {
        field,
      },
    );
  }
  return { createdAt, movementId };
}

/** A real instant Postgres accepts (no 30 February, no year 0), in the exact form we write. */
export function isExactInstant(text: string): boolean {
  if (!EXACT_ISO.test(text)) return false;
  const date = new Date(text);
  return (
    !Number.isNaN(date.getTime()) &&
    date.getUTCFullYear() >= 1970 &&
    date.toISOString().slice(0, 23) === text.slice(0, 23)
  );
}
