import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The `Ledgerfeed-Signature` header, as Stripe signs: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<raw body>">`. The timestamp is signed with the body, so a captured delivery cannot be
 * replayed past the receiver's tolerance. During a secret rotation each secret adds its own `v1=`
 * entry (newest first), so a receiver holding either secret verifies every delivery.
 */
export function signatureHeader(secrets: readonly string[], timestampSec: number, rawBody: string): string {
  if (secrets.length === 0) throw new Error('signatureHeader: no secret to sign with');
  const t = Math.floor(timestampSec);
  return [`t=${t}`, ...secrets.map((secret) => `v1=${hmacHex(secret, t, rawBody)}`)].join(',');
}

/** Default tolerance of a receiver: a delivery signed longer ago than this is refused. */
export const SIGNATURE_TOLERANCE_SEC = 300;

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

/**
 * What a receiver does with the header (the docs' snippet does the same in plain node:crypto):
 * parse `t` and every `v1`, refuse a timestamp outside the tolerance, accept if any `v1` matches
 * (compared in constant time).
 */
export function verifySignature(
  secret: string,
  header: string,
  rawBody: string,
  toleranceSec: number = SIGNATURE_TOLERANCE_SEC,
  nowSec: number = Date.now() / 1000,
): SignatureCheck {
  let t: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) t = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) candidates.push(value);
  }
  if (t === undefined) return { ok: false, reason: 'no timestamp (t=) in the header' };
  if (candidates.length === 0) return { ok: false, reason: 'no v1 signature in the header' };
  if (Math.abs(nowSec - t) > toleranceSec) return { ok: false, reason: 'timestamp outside the tolerance' };
  const expected = Buffer.from(hmacHex(secret, t, rawBody), 'hex');
  const matches = candidates.some((candidate) => timingSafeEqual(Buffer.from(candidate, 'hex'), expected));
  return matches ? { ok: true } : { ok: false, reason: 'no v1 signature matches this secret' };
}

function hmacHex(secret: string, t: number, rawBody: string): string {
  return createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex');
}
