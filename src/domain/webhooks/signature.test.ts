import { createHmac } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { signatureHeader } from './signature.js';

const body = '{"id":"evt_1","type":"post.liked","sequence":1}';

// The receiver's side (verifyWebhook) is tested with the typed client: clients/typescript/test/webhooks.test.ts.
describe('webhook signature', () => {
  test('signs "<t>.<raw body>" with HMAC-SHA256, hex, as t=...,v1=...', () => {
    const expected = createHmac('sha256', 'whsec_a').update(`1700000000.${body}`).digest('hex');
    expect(signatureHeader(['whsec_a'], 1_700_000_000, body)).toBe(`t=1700000000,v1=${expected}`);
  });

  test('during a rotation every secret adds a v1 entry, newest first', () => {
    const header = signatureHeader(['whsec_new', 'whsec_old'], 1_700_000_000, body);
    const entries = header.split(',').filter((part) => part.startsWith('v1='));
    expect(entries).toEqual([
      `v1=${createHmac('sha256', 'whsec_new').update(`1700000000.${body}`).digest('hex')}`,
      `v1=${createHmac('sha256', 'whsec_old').update(`1700000000.${body}`).digest('hex')}`,
    ]);
  });
});
