import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { createWebhookSecretBox, isSealedWebhookSecret, WebhookSecretError } from './webhook-secret-box.js';
import { generateWebhookSecret } from './webhook-secret.js';

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
    // Still opens after eviction (unsealed again): the cache only saves work.
    expect(box.open(sealed[0]!, ENDPOINT)).toBe('whsec_a');
  });
});
