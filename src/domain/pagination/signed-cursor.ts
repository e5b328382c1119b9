import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.js';

/**
 * Opaque, tamper-evident pagination cursors: `<base64url JSON array>.<base64url HMAC>`. The scope
 * (a feed's name, an account id) is signed but not carried, so a cursor works only where it was
 * issued. Decoding checks the MAC before anything else; callers still validate every value (the
 * secret may be a public default), and a bad cursor is a 400, never a query.
 */

/** Bytes of HMAC-SHA256 kept: 128 bits is far beyond guessing, and keeps cursors short. */
const MAC_BYTES = 16;

function mac(secret: string, scope: string, payload: string): Buffer {
  return createHmac('sha256', secret).update(`${scope}\n${payload}`).digest().subarray(0, MAC_BYTES);
}

export function encodeSignedCursor(secret: string, scope: string, values: readonly unknown[]): string {
  const payload = Buffer.from(JSON.stringify(values)).toString('base64url');
  return `${payload}.${mac(secret, scope, payload).toString('base64url')}`;
}

/** The values a cursor carries; AppError('invalid_request') naming `field` when it is not ours. */
export function decodeSignedCursor(
  secret: string,
  scope: string,
  cursor: string,
  field = 'cursor',
): unknown[] {
  const invalid = () =>
    new AppError('invalid_request', `${field} is not valid: pass a cursor from a previous page unchanged`, {
      field,
    });
  const [payload, signature, ...rest] = cursor.split('.');
  if (!payload || !signature || rest.length > 0) throw invalid();
  const given = Buffer.from(signature, 'base64url');
  // Node's base64url decoder skips junk characters, so compare the canonical re-encoding too.
  if (given.length !== MAC_BYTES || given.toString('base64url') !== signature) throw invalid();
  if (!timingSafeEqual(given, mac(secret, scope, payload))) throw invalid();
  try {
    const values: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (Array.isArray(values)) return values;
  } catch {
    // not JSON: invalid below
  }
  throw invalid();
}
