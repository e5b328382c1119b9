import { createHmac } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { signatureHeader, verifySignature } from './signature.js';

const body = '{"id":"evt_1","type":"post.liked","sequence":1}';

describe('webhook signature', () => {
  test('signs "<t>.<raw body>" with HMAC-SHA256, hex, as t=...,v1=...', () => {
    const expected = createHmac('sha256', 'whsec_a').update(`1700000000.${body}`).digest('hex');
    expect(signatureHeader(['whsec_a'], 1_700_000_000, body)).toBe(`t=1700000000,v1=${expected}`);
  });

  test('during a rotation every secret adds a v1 entry, and each secret verifies', () => {
    const header = signatureHeader(['whsec_new', 'whsec_old'], 1_700_000_000, body);
    expect(header.split(',').filter((part) => part.startsWith('v1='))).toHaveLength(2);
    expect(verifySignature('whsec_new', header, body, 300, 1_700_000_010)).toEqual({ ok: true });
    expect(verifySignature('whsec_old', header, body, 300, 1_700_000_010)).toEqual({ ok: true });
    expect(verifySignature('whsec_other', header, body, 300, 1_700_000_010).ok).toBe(false);
  });

  test('a changed body or a timestamp outside the tolerance does not verify', () => {
    const header = signatureHeader(['whsec_a'], 1_700_000_000, body);
    expect(verifySignature('whsec_a', header, `${body} `, 300, 1_700_000_000).ok).toBe(false);
    expect(verifySignature('whsec_a', header, body, 300, 1_700_000_301)).toEqual({
      ok: false,
      reason: 'timestamp outside the tolerance',
    });
    // The timestamp is signed: moving it forward breaks the signature.
    const moved = header.replace('t=1700000000', 't=1700000300');
    expect(verifySignature('whsec_a', moved, body, 300, 1_700_000_300).ok).toBe(false);
    expect(verifySignature('whsec_a', 'v1=abc', body).ok).toBe(false);
  });
});
