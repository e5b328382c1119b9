import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, test } from 'vitest';
import {
  createKeystore,
  DEV_MASTER_KEY_FILE,
  loadOrCreateDevMasterKey,
  parseMasterKey,
  WalletKeyError,
} from './keystore.js';

const ADDRESS = '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin';
const seed = new Uint8Array(randomBytes(32));

describe('createKeystore', () => {
  const keystore = createKeystore(randomBytes(32));

  test('decrypt(encrypt(seed)) returns the seed, and the sealed text has the v1 format', () => {
    const sealed = keystore.encrypt(seed, ADDRESS);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    expect(keystore.decrypt(sealed, ADDRESS)).toEqual(seed);
  });

  test('sealing the same seed twice gives different texts (fresh IV each time)', () => {
    expect(keystore.encrypt(seed, ADDRESS)).not.toBe(keystore.encrypt(seed, ADDRESS));
  });

  test('a different master key throws WalletKeyError naming WALLET_MASTER_KEY, without secret bytes', () => {
    const sealed = keystore.encrypt(seed, ADDRESS);
    const other = createKeystore(randomBytes(32));
    expect(() => other.decrypt(sealed, ADDRESS)).toThrow(WalletKeyError);
    try {
      other.decrypt(sealed, ADDRESS);
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toContain('WALLET_MASTER_KEY does not match the one the wallet was sealed with');
      expect(message).not.toContain(Buffer.from(seed).toString('hex'));
      expect(message).not.toContain(sealed.split('.')[3]);
    }
  });

  test('a flipped ciphertext, IV or tag byte throws WalletKeyError', () => {
    const sealed = keystore.encrypt(seed, ADDRESS);
    for (const part of [1, 2, 3]) {
      const parts = sealed.split('.');
      const bytes = Buffer.from(parts[part] ?? '', 'base64url');
      bytes[0] = (bytes[0] ?? 0) ^ 1;
      parts[part] = bytes.toString('base64url');
      expect(() => keystore.decrypt(parts.join('.'), ADDRESS)).toThrow(WalletKeyError);
    }
  });

  test('opening a sealed secret under another wallet address (aad) throws WalletKeyError', () => {
    const sealed = keystore.encrypt(seed, ADDRESS);
    expect(() => keystore.decrypt(sealed, 'So11111111111111111111111111111111111111112')).toThrow(
      WalletKeyError,
    );
  });

  test('a truncated tag or an unknown version is refused', () => {
    const [, iv, tag, ct] = keystore.encrypt(seed, ADDRESS).split('.');
    const shortTag = Buffer.from(tag ?? '', 'base64url')
      .subarray(0, 8)
      .toString('base64url');
    expect(() => keystore.decrypt(`v1.${iv}.${shortTag}.${ct}`, ADDRESS)).toThrow(WalletKeyError);
    expect(() => keystore.decrypt(`v2.${iv}.${tag}.${ct}`, ADDRESS)).toThrow(/format/);
  });

  test('a master key that is not 32 bytes is refused', () => {
    expect(() => createKeystore(randomBytes(16))).toThrow(/32 bytes/);
  });
});

describe('parseMasterKey', () => {
  const key = randomBytes(32);

  test('accepts 64 hex characters, base64 and base64url (padded or not) of 32 bytes', () => {
    expect(parseMasterKey(key.toString('hex'))).toEqual(key);
    expect(parseMasterKey(key.toString('hex').toUpperCase())).toEqual(key);
    expect(parseMasterKey(key.toString('base64'))).toEqual(key);
    expect(parseMasterKey(key.toString('base64url'))).toEqual(key);
    expect(parseMasterKey(`${key.toString('base64url')}=`)).toEqual(key);
    expect(parseMasterKey(`  ${key.toString('hex')}\n`)).toEqual(key);
  });

  test('refuses other lengths and formats with a message naming WALLET_MASTER_KEY and the format, not the value', () => {
    const tooShort = randomBytes(16).toString('hex');
    for (const bad of ['', tooShort, randomBytes(33).toString('base64'), 'z'.repeat(64), 'not a key']) {
      expect(() => parseMasterKey(bad)).toThrow(
        /WALLET_MASTER_KEY must be 32 bytes written as 64 hex characters/,
      );
    }
    expect(() => parseMasterKey(tooShort)).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(tooShort) as unknown }),
    );
  });
});

describe('loadOrCreateDevMasterKey', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lf-keystore-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('creates the key file with mode 0600 and warns loudly, then reuses the same key', () => {
    const logs: string[] = [];
    const dataDir = join(dir, 'nested');
    const first = loadOrCreateDevMasterKey(dataDir, (msg) => logs.push(msg));
    const path = join(dataDir, DEV_MASTER_KEY_FILE);
    expect(first).toHaveLength(32);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(logs[0]).toMatch(/WARNING: created DEVELOPMENT wallet master key/);
    expect(logs[0]).toMatch(/Production must set WALLET_MASTER_KEY/);

    const second = loadOrCreateDevMasterKey(dataDir, (msg) => logs.push(msg));
    expect(second).toEqual(first);
    expect(logs[1]).toMatch(/WARNING: using DEVELOPMENT wallet master key/);
  });
});
