import { createHmac } from 'node:crypto';

/**
 * The `Ledgerfeed-Signature` header, as Stripe signs: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<raw body>">`. The timestamp is signed with the body, so a captured delivery cannot be
 * replayed past the receiver's tolerance (the typed client's verifyWebhook checks it:
 * clients/typescript/src/webhooks.ts). During a secret rotation each secret adds its own `v1=`
 * entry (newest first), so a receiver holding either secret verifies every delivery.
 */
export function signatureHeader(secrets: readonly string[], timestampSec: number, rawBody: string): string {
  if (secrets.length === 0) throw new Error('signatureHeader: no secret to sign with');
  const t = Math.floor(timestampSec);
  return [`t=${t}`, ...secrets.map((secret) => `v1=${hmacHex(secret, t, rawBody)}`)].join(',');
}

function hmacHex(secret: string, t: number, rawBody: string): string {
  return createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex');
}
