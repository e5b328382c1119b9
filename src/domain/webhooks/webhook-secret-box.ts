import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { WEBHOOK_SECRET_PREFIX } from './webhook-secret.js';

/**
 * Webhook signing secrets at rest (issue 49): AES-256-GCM under a key derived from the master key
 * (WALLET_MASTER_KEY, the one the custodial wallets are sealed with), so a database dump or a read
 * replica holds nothing that signs a delivery. Signing needs the secret itself (an HMAC key), so it
 * is sealed, not hashed.
 *
 * Sealed format: `whseal1.<iv>.<tag>.<ciphertext>`, each part base64url, a fresh random 12-byte IV
 * per seal. The endpoint id is the additional authenticated data: a sealed secret copied onto
 * another endpoint's row fails to open instead of signing that endpoint's deliveries. The key is
 * HMAC-SHA256(master key, "ledgerfeed:webhook-secret:v1"), never the master key itself, so no
 * ciphertext here shares a key with a wallet's.
 *
 * No error message here ever contains a secret or key bytes.
 */

/** What every sealed secret starts with (the database's check constraint holds every row to it). */
export const SEALED_WEBHOOK_SECRET_PREFIX = 'whseal1.';

/**
 * Unsealed secrets kept in memory: the dispatcher signs every delivery, and a backlog is thousands
 * a second. Keyed by endpoint id and sealed text (a fresh IV per seal, so a rotation is a new key
 * and an old entry is never served for it); oldest out past this many (two per endpoint mid-rotation).
 */
export const MAX_OPENED_WEBHOOK_SECRETS = 10_000;

export class WebhookSecretError extends Error {
  override name = 'WebhookSecretError';
}

export interface WebhookSecretBox {
  /** `secret` sealed for endpoint `endpointId` (the id it will be stored under). */
  seal(secret: string, endpointId: string): string;
  /**
   * The secret stored for `endpointId`, unsealed (from memory after the first time). A secret
   * written in clear before sealing existed (`whsec_...`) is answered as it is: every start seals
   * those (sealStoredWebhookSecrets), so one is seen here only between a migration and that step.
   * Throws WebhookSecretError when the master key is not the one it was sealed with, the text was
   * altered, or it belongs to another endpoint.
   */
  open(stored: string, endpointId: string): string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

export function isSealedWebhookSecret(stored: string): boolean {
  return stored.startsWith(SEALED_WEBHOOK_SECRET_PREFIX);
}

export function createWebhookSecretBox(
  masterKey: Buffer,
  options: { maxOpened?: number } = {},
): WebhookSecretBox {
  const key = createHmac('sha256', masterKey).update('ledgerfeed:webhook-secret:v1').digest();
  const maxOpened = options.maxOpened ?? MAX_OPENED_WEBHOOK_SECRETS;
  const opened = new Map<string, string>();
  const aadOf = (endpointId: string) => Buffer.from(`webhook-endpoint:${endpointId}`, 'utf8');

  const unseal = (stored: string, endpointId: string): string => {
    const parts = stored.slice(SEALED_WEBHOOK_SECRET_PREFIX.length).split('.');
    const [ivText, tagText, ciphertextText] = parts;
    const iv = Buffer.from(ivText ?? '', 'base64url');
    const tag = Buffer.from(tagText ?? '', 'base64url');
    const ciphertext = Buffer.from(ciphertextText ?? '', 'base64url');
    // Pinning the tag length stops a truncated tag from weakening authentication.
    if (parts.length !== 3 || iv.length !== IV_BYTES || tag.length !== TAG_BYTES || ciphertext.length === 0)
      throw new WebhookSecretError(`the sealed secret of webhook ${endpointId} is malformed`);
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(aadOf(endpointId));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
    } catch {
      throw new WebhookSecretError(
        `cannot open the secret of webhook ${endpointId}: WALLET_MASTER_KEY does not match the one it ` +
          'was sealed with (or the sealed secret was altered or belongs to another endpoint)',
      );
    }
  };

  return {
    seal(secret, endpointId) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(aadOf(endpointId));
      const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return (
        SEALED_WEBHOOK_SECRET_PREFIX +
        [iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64url')).join('.')
      );
    },

    open(stored, endpointId) {
      if (stored.startsWith(WEBHOOK_SECRET_PREFIX)) return stored;
      if (!isSealedWebhookSecret(stored))
        throw new WebhookSecretError(`the secret of webhook ${endpointId} is neither sealed nor a secret`);
      const cacheKey = `${endpointId}/${stored}`;
      const hit = opened.get(cacheKey);
      if (hit !== undefined) {
        // Most recently used last: the oldest entry is the first one Map iteration yields.
        opened.delete(cacheKey);
        opened.set(cacheKey, hit);
        return hit;
      }
      const secret = unseal(stored, endpointId);
      opened.set(cacheKey, secret);
      if (opened.size > maxOpened) opened.delete(opened.keys().next().value!);
      return secret;
    },
  };
}
