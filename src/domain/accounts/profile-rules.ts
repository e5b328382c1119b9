import { AppError } from '../errors.js';
import { refusedTextMessage } from '../text/storable-text.js';

/** The spec's handle rule: 3 to 20 of lowercase letters, digits and underscores. */
const HANDLE = /^[a-z0-9_]{3,20}$/;
export const HANDLE_RULE = '3 to 20 characters: lowercase letters, digits and underscores';
export const DISPLAY_NAME_MAX = 50;
export const BIO_MAX = 160;
/** A handle may change once per this period. */
export const HANDLE_CHANGE_COOLDOWN_MS = 7 * 24 * 60 * 60 * 1000;

/** A handle as a path or body gives it: a leading `@` is tolerated, nothing else is changed. */
export function normalizeHandle(raw: string): string {
  return raw.startsWith('@') ? raw.slice(1) : raw;
}

export function validateHandle(handle: unknown, field = 'handle'): string {
  // The pattern refuses control and bidi characters too; the text rule says which one it was.
  const refused = typeof handle === 'string' ? refusedTextMessage(field, handle) : undefined;
  if (refused) throw new AppError('invalid_request', refused, { field });
  if (typeof handle !== 'string' || !HANDLE.test(handle)) {
    throw new AppError('invalid_request', `${field} must be ${HANDLE_RULE}`, { field });
  }
  return handle;
}

/**
 * Display names and bios: one line, no control or bidi characters (storable-text.ts); counted in
 * characters (code points), as people do, not UTF-16 units.
 */
export function validateText(value: unknown, field: 'display_name' | 'bio', max: number): string {
  if (typeof value !== 'string')
    throw new AppError('invalid_request', `${field} must be a string`, { field });
  const refused = refusedTextMessage(field, value);
  if (refused) throw new AppError('invalid_request', refused, { field });
  if ([...value].length > max) {
    throw new AppError('invalid_request', `${field} must be at most ${max} characters`, { field });
  }
  return value;
}

/** When the handle may next change, or undefined if it may change now. */
export function nextHandleChangeAt(handleChangedAt: Date | null, now: Date): Date | undefined {
  if (!handleChangedAt) return undefined;
  const allowed = new Date(handleChangedAt.getTime() + HANDLE_CHANGE_COOLDOWN_MS);
  return allowed > now ? allowed : undefined;
}
