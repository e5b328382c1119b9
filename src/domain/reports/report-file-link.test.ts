import { describe, expect, test } from 'vitest';
import {
  checkFileLinkSignature,
  fileLinkQuery,
  fileLinkSignature,
  parseFileLinkQuery,
} from './report-file-link.js';

const key = Buffer.alloc(32, 7);
const runA = '0b6f1c2e-3d4a-4b5c-8d6e-7f8091a2b3c4';
const runB = '1c7f2d3e-4e5b-4c6d-9e7f-8091a2b3c4d5';
const alice = '2d8e3f4a-5b6c-4d7e-8f90-a1b2c3d4e5f6';
const bob = '3e9f4a5b-6c7d-4e8f-9a01-b2c3d4e5f6a7';
const now = new Date('2026-12-01T12:00:00Z');
const inFiveMinutes = Math.floor(now.getTime() / 1000) + 300;
const claims = { runId: runA, expires: inFiveMinutes, accountId: alice };

describe('report file link signatures', () => {
  test('a signature checks for its own run, expiry and account until it expires', () => {
    const signature = fileLinkSignature(key, claims);
    expect(signature).toMatch(/^[0-9a-f]{64}$/);
    expect(checkFileLinkSignature(key, claims, signature, now)).toBe('valid');
    expect(checkFileLinkSignature(key, claims, signature, new Date(inFiveMinutes * 1000))).toBe('expired');
  });

  test('another run, expiry, account or key does not check', () => {
    const signature = fileLinkSignature(key, claims);
    expect(checkFileLinkSignature(key, { ...claims, runId: runB }, signature, now)).toBe('invalid');
    expect(checkFileLinkSignature(key, { ...claims, expires: inFiveMinutes + 1 }, signature, now)).toBe(
      'invalid',
    );
    expect(checkFileLinkSignature(key, { ...claims, accountId: bob }, signature, now)).toBe('invalid');
    expect(checkFileLinkSignature(Buffer.alloc(32, 8), claims, signature, now)).toBe('invalid');
    const flipped = `${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`;
    expect(checkFileLinkSignature(key, claims, flipped, now)).toBe('invalid');
  });

  test('an expired signature is told apart only once it is genuine', () => {
    const past = { ...claims, expires: inFiveMinutes - 600 };
    expect(checkFileLinkSignature(key, past, fileLinkSignature(key, past), now)).toBe('expired');
    expect(checkFileLinkSignature(key, past, 'ab'.repeat(32), now)).toBe('invalid');
  });

  test('the query names the account only when it is not the run’s asker', () => {
    expect(fileLinkQuery(key, claims, alice)).toBe(
      `?expires=${inFiveMinutes}&signature=${fileLinkSignature(key, claims)}`,
    );
    expect(fileLinkQuery(key, claims, bob)).toBe(
      `?expires=${inFiveMinutes}&signature=${fileLinkSignature(key, claims)}&account=${alice}`,
    );
  });

  test('a query that cannot be a link is refused before any lookup', () => {
    const signature = fileLinkSignature(key, claims);
    expect(parseFileLinkQuery({ expires: String(inFiveMinutes), signature })).toEqual({
      expires: inFiveMinutes,
      signature,
      account: undefined,
    });
    for (const query of [
      { signature },
      { expires: String(inFiveMinutes) },
      { expires: '-1', signature },
      { expires: '1e10', signature },
      { expires: String(inFiveMinutes), signature: signature.toUpperCase() },
      { expires: String(inFiveMinutes), signature: signature.slice(2) },
      { expires: String(inFiveMinutes), signature, account: 'alice' },
    ]) {
      expect(parseFileLinkQuery(query)).toBeUndefined();
    }
  });
});
