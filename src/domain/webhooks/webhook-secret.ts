import { randomBytes } from 'node:crypto';

/** What every signing secret starts with, so a secret pasted into the wrong place is recognisable. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/**
 * A new signing secret: 32 random bytes (256 bits, the HMAC-SHA256 key size), base64url so it
 * pastes into any config file. Shown to the owner once, at creation or rotation; stored sealed
 * with the master key (webhook-secret-box.ts), not hashed, since signing needs the secret itself.
 */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64url');
}
