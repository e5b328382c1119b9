import { PAID_REST } from './generated/paid-operations.js';
import type { Resend } from './transport.js';

/** Each paid REST operation's path template as a pattern, matched at the end of the URL's path. */
const PAID = PAID_REST.map(({ method, path }) => ({
  method,
  pattern: new RegExp(`${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
}));

/**
 * How safe it is to send a REST request again: a paid write is keyed and may be retried; a read
 * may be; any other write (a like, a follow, a webhook's creation) is not sent again after a lost
 * answer, since nothing makes its second run a no-op.
 */
export function restResend(request: Request): Resend {
  const path = new URL(request.url).pathname;
  const paid = PAID.some(({ method, pattern }) => method === request.method && pattern.test(path));
  if (paid) return { idempotencyKey: true, safe: true };
  return { idempotencyKey: false, safe: request.method === 'GET' || request.method === 'HEAD' };
}
