import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Custodial wallet secrets at rest: AES-256-GCM under one 32-byte master key (WALLET_MASTER_KEY).
 *
 * Sealed format: `v1.<iv>.<tag>.<ciphertext>`, each part base64url; a fresh random 12-byte IV per
 * seal (GCM breaks if an IV repeats under one key; 2^-32 collision odds after 2^32 seals are fine for
 * per-user wallets). The wallet address is the additional authenticated data, so a sealed secret
 * copied onto another wallet's row fails to open instead of signing for the wrong owner.
 *
 * No error message here ever contains key or seed bytes.
 */

export class WalletKeyError extends Error {
  override name = 'WalletKeyError';
}

export interface Keystore {
  /** `seed` is a 32-byte ed25519 seed; `aad` is the wallet address (base58) that owns it. */
  encrypt(seed: Uint8Array, aad: string): string;
  /** Throws WalletKeyError when the key is wrong, the data was altered, or `aad` is not its owner. */
  decrypt(sealed: string, aad: string): Uint8Array;
}

const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SEED_BYTES = 32;
const MASTER_KEY_FORMAT =
  '32 bytes written as 64 hex characters, or as base64/base64url (43 or 44 characters)';

export function createKeystore(masterKey: Buffer): Keystore {
  if (masterKey.length !== KEY_BYTES) {
    throw new WalletKeyError(`WALLET_MASTER_KEY must be ${KEY_BYTES} bytes, got ${masterKey.length}`);
  }
  // Our own copy: the caller may reuse or zero its buffer.
  const key = Buffer.from(masterKey);

  return {
    encrypt(seed, aad) {
      if (seed.length !== SEED_BYTES) {
        throw new RangeError(`wallet seed must be ${SEED_BYTES} bytes, got ${seed.length}`);
      }
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(aad, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(seed), cipher.final()]);
      const tag = cipher.getAuthTag();
      return [VERSION, iv, tag, ciphertext]
        .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
        .join('.');
    },

    decrypt(sealed, aad) {
      const parts = sealed.split('.');
      const [version, ivText, tagText, ciphertextText] = parts;
      if (parts.length !== 4 || version !== VERSION || !ivText || !tagText || !ciphertextText) {
        throw new WalletKeyError(
          `sealed wallet secret of ${aad} is not in the ${VERSION}.<iv>.<tag>.<ciphertext> format`,
        );
      }
      const iv = Buffer.from(ivText, 'base64url');
      const tag = Buffer.from(tagText, 'base64url');
      const ciphertext = Buffer.from(ciphertextText, 'base64url');
      // Pinning the tag length stops a truncated tag from weakening authentication.
      if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES || ciphertext.length !== SEED_BYTES) {
        throw mismatch(aad);
      }
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(aad, 'utf8'));
      decipher.setAuthTag(tag);
      try {
        return new Uint8Array(Buffer.concat([decipher.update(ciphertext), decipher.final()]));
      } catch {
        // GCM cannot tell a wrong key from altered bytes or a foreign aad; the wrong key is by far
        // the most common cause in practice (a new deployment, a rotated secret).
        throw mismatch(aad);
      }
    },
  };
}

function mismatch(aad: string): WalletKeyError {
  return new WalletKeyError(
    `cannot open the wallet secret of ${aad}: WALLET_MASTER_KEY does not match the one the wallet was sealed with ` +
      '(or the sealed secret was altered or belongs to another wallet)',
  );
}

/** Accepts 64 hex characters, or base64/base64url of exactly 32 bytes; surrounding whitespace ignored. */
export function parseMasterKey(text: string): Buffer {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  // One alphabet per value; 43 characters unpadded or 44 with one '=' encode exactly 32 bytes.
  if (/^[A-Za-z0-9+/]{43}=?$/.test(trimmed) || /^[A-Za-z0-9_-]{43}=?$/.test(trimmed)) {
    const key = Buffer.from(trimmed, 'base64');
    if (key.length === KEY_BYTES) return key;
  }
  // The value itself is a secret: report only its length.
  throw new WalletKeyError(
    `WALLET_MASTER_KEY must be ${MASTER_KEY_FORMAT}; got a value of ${trimmed.length} characters`,
  );
}

export const DEV_MASTER_KEY_FILE = 'wallet-master.key';

/**
 * Development only: a master key kept in `<dataDir>/wallet-master.key` (created 0600 on first use),
 * so `npm start` works with no configuration and wallets survive restarts. Losing the file loses
 * every custodial wallet's funds; production sets WALLET_MASTER_KEY and never calls this.
 */
export function loadOrCreateDevMasterKey(dataDir: string, log: (msg: string) => void): Buffer {
  const path = join(dataDir, DEV_MASTER_KEY_FILE);
  let created = false;
  try {
    mkdirSync(dataDir, { recursive: true });
    // 'wx' fails if the file exists, so two processes starting together never overwrite each other's key.
    writeFileSync(path, `${randomBytes(KEY_BYTES).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    created = true;
  } catch (error) {
    if (!isErrnoException(error) || error.code !== 'EEXIST') throw error;
  }
  let key: Buffer;
  try {
    key = parseMasterKey(readFileSync(path, 'utf8'));
  } catch (error) {
    if (!(error instanceof WalletKeyError)) throw error;
    throw new WalletKeyError(`${path} does not hold a valid master key (${MASTER_KEY_FORMAT})`);
  }
  log(
    `WARNING: ${created ? 'created' : 'using'} DEVELOPMENT wallet master key ${path}. ` +
      'Custodial wallet secrets are encrypted with a key stored next to the data: NOT FOR PRODUCTION. ' +
      'Production must set WALLET_MASTER_KEY (32 bytes, 64 hex characters); losing this file loses every wallet.',
  );
  return key;
}

function isErrnoException(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && 'code' in error;
}
