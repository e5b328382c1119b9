import type * as nodeCrypto from 'node:crypto';
import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, test, vi } from 'vitest';
import { createWebhookSecretBox, isSealedWebhookSecret, WebhookSecretError } from './webhook-secret-box.js';
import { generateWebhookSecret } from './webhook-secret.js';

/** createDecipheriv counted: each call is one unseal, what the box's memory is there to save. */
const unseals = vi.hoisted(() => ({ count: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof nodeCrypto>();
  return {
    ...crypto,
    createDecipheriv: (...args: Parameters<typeof crypto.createDecipheriv>) => {
      unseals.count++;
      return crypto.createDecipheriv(...args);
    },
  };
});
beforeEach(() => {
  unseals.count = 0;
});

const ENDPOINT = '0b6f2c1e-4a7d-4c1b-9e0f-1a2b3c4d5e6f';
const OTHER = '7e1d9a3c-2b4f-4e6a-8c0d-9f8e7d6c5b4a';

describe('webhook secret box', () => {
  test('seals a secret into text that holds none of it, and opens it again', () => {
    const box = createWebhookSecretBox(randomBytes(32));
    const secret = generateWebhookSecret();
    const sealed = box.seal(secret, ENDPOINT);
    expect(isSealedWebhookSecret(sealed)).toBe(true);
    expect(sealed).toMatch(/^whseal1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const random = secret.slice('whsec_'.length);
    for (const form of [secret, random, Buffer.from(random, 'base64url').toString('hex')])
      expect(sealed).not.toContain(form);
    expect(box.seal(secret, ENDPOINT)).not.toBe(sealed); // a fresh IV each time
    expect(box.open(sealed, ENDPOINT)).toBe(secret);
    expect(box.open(sealed, ENDPOINT)).toBe(secret); // from memory
    expect(unseals.count).toBe(1);
  });

  test('refuses another master key, another endpoint and altered text, naming no secret', () => {
    const box = createWebhookSecretBox(randomBytes(32));
    const secret = generateWebhookSecret();
    const sealed = box.seal(secret, ENDPOINT);
    const attempts = [
      () => createWebhookSecretBox(randomBytes(32)).open(sealed, ENDPOINT),
      () => box.open(sealed, OTHER),
      () => box.open(sealed.slice(0, -2) + (sealed.endsWith('AA') ? 'BB' : 'AA'), ENDPOINT),
      () => box.open('whseal1.x.y', ENDPOINT),
      () => box.open('plain text', ENDPOINT),
    ];
    for (const attempt of attempts) {
      expect(attempt).toThrow(WebhookSecretError);
      try {
        attempt();
      } catch (error) {
        expect((error as Error).message).not.toContain(secret.slice(6));
      }
    }
  });

  test('a secret written in clear before sealing existed is answered as it is', () => {
    const box = createWebhookSecretBox(randomBytes(32));
    expect(box.open('whsec_legacy', ENDPOINT)).toBe('whsec_legacy');
  });

  test('keeps at most maxOpened unsealed secrets, the least recently used out', () => {
    const key = randomBytes(32);
    const box = createWebhookSecretBox(key, { maxOpened: 2 });
    const sealer = createWebhookSecretBox(key);
    const sealed = ['a', 'b', 'c'].map((name) => sealer.seal(`whsec_${name}`, ENDPOINT));
    expect(sealed.map((text) => box.open(text, ENDPOINT))).toEqual(['whsec_a', 'whsec_b', 'whsec_c']);
    expect(unseals.count).toBe(3);
    // c and b are kept: opened again from memory.
    expect(box.open(sealed[2]!, ENDPOINT)).toBe('whsec_c');
    expect(box.open(sealed[1]!, ENDPOINT)).toBe('whsec_b');
    expect(unseals.count).toBe(3);
    // a went out with c's arrival: still opens (unsealed again), the cache only saves work.
    expect(box.open(sealed[0]!, ENDPOINT)).toBe('whsec_a');
    expect(unseals.count).toBe(4);
    // And a's return pushed out c, the least recently used (b was opened after it).
    expect(box.open(sealed[1]!, ENDPOINT)).toBe('whsec_b');
    expect(unseals.count).toBe(4);
    expect(box.open(sealed[2]!, ENDPOINT)).toBe('whsec_c');
    expect(unseals.count).toBe(5);
  });
});
