import { createHmac, timingSafeEqual } from 'node:crypto';
import { LedgerfeedError } from './errors.js';

/** Deliveries signed longer ago than this are refused: a captured one cannot be replayed later. */
export const DEFAULT_WEBHOOK_TOLERANCE_SEC = 300;

/** An event as a webhook delivers it (the same object as GET /api/v1/events lists). */
export interface WebhookEvent {
  id: string;
  type: string;
  created_at: string;
  sequence: number;
  data: Record<string, unknown>;
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

/**
 * Checks a webhook delivery and answers its event. `headers` are the request's (a `Headers`, or
 * node's `req.headers`), `rawBody` its body exactly as received: verify before parsing, since
 * re-serialised JSON does not hash the same. The `Ledgerfeed-Signature` header is
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, with a second `v1` while a rotated
 * secret still signs; any `v1` that matches accepts. Throws a LedgerfeedError (status 400, the
 * answer to give) when the header is missing, the timestamp is older (or newer) than
 * `toleranceSec`, or no signature matches `secret`.
 */
export function verifyWebhook(
  secret: string,
  headers: HeaderBag,
  rawBody: string | Uint8Array,
  options: { toleranceSec?: number; nowSec?: number } = {},
): WebhookEvent {
  const tolerance = options.toleranceSec ?? DEFAULT_WEBHOOK_TOLERANCE_SEC;
  const now = options.nowSec ?? Date.now() / 1000;
  const body = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8');
  const header = headerOf(headers, 'ledgerfeed-signature');
  if (header === undefined) refuse('no Ledgerfeed-Signature header');

  let t: number | undefined;
  const signatures: Buffer[] = [];
  for (const part of header.split(',')) {
    const [key, value = ''] = part.trim().split('=', 2);
    if (key === 't' && /^\d{1,12}$/.test(value)) t = Number(value);
    if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) signatures.push(Buffer.from(value, 'hex'));
  }
  if (t === undefined) refuse('no timestamp (t=) in the signature header');
  if (Math.abs(now - t) > tolerance)
    refuse(`signed ${Math.round(now - t)} s ago, outside the ${tolerance} s tolerance`);
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  if (!signatures.some((signature) => timingSafeEqual(signature, expected))) {
    refuse('no v1 signature matches this secret');
  }
  return JSON.parse(body) as WebhookEvent;
}

function headerOf(headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const found = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(found) ? found[0] : found;
}

function refuse(message: string): never {
  throw new LedgerfeedError(400, 'invalid_signature', message);
}
